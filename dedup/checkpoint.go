package dedup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/neardup/neardup/internal/atomicfile"
	"github.com/neardup/neardup/internal/objstore"
)

// Checkpoints for --resume. With Input.Resume, each input file, once all
// its documents have reached the finder, gets a checkpoint holding every
// document's id, text length and sketch. A later run with the same
// configuration and unchanged input files feeds those sketches to the
// finder instead of reading, normalising and sketching the file again; the
// finder sees exactly the same input, so the result is the same.
//
// The checkpoints live in a state directory under Outputs.TmpDir named by
// a SHA-256 of the configuration and of each input's path, size and
// modification time; it is removed when a run succeeds. Standard input is
// never checkpointed. The file format is in docs/format/checkpoint.md.

const (
	ckptMagic   = "NDCK"
	ckptVersion = 2 // 2: sketches in package sketch's binary form
	ckptRecord  = 'R'
	ckptEnd     = 'E'
)

// errCheckpoint marks a checkpoint that cannot be used.
var errCheckpoint = errors.New("bad checkpoint")

// stateDir returns the state directory of a run.
func stateDir(tmp string, cfg Options, m Method, in Input) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	cfg.Workers = 0 // the result does not depend on it
	spec, threshold, err := cfg.spec()
	if err != nil {
		return "", err
	}
	cfg.Spec, cfg.VerifyThreshold = spec, threshold // resolved: a valid sketch.Spec
	if err := enc.Encode(cfg); err != nil {
		return "", err
	}
	enc.Encode(m.Facts())
	enc.Encode([]any{in.Options.TextField, in.Options.IDField, in.Options.MaxDocBytes, in.SkipInvalid})
	for _, list := range [][]string{in.Against, in.Files} {
		fmt.Fprintf(h, "list %d\n", len(list))
		for _, name := range list {
			if name == "-" {
				fmt.Fprintln(h, "-")
				continue
			}
			if objstore.IsURL(name) {
				// An object has no cheap modification time here: its URL
				// names it.
				fmt.Fprintf(h, "%q\n", name)
				continue
			}
			abs, err := filepath.Abs(name)
			if err != nil {
				return "", err
			}
			st, err := os.Stat(name)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%q %d %d\n", abs, st.Size(), st.ModTime().UnixNano())
		}
	}
	if cfg.IDFFile != "" { // the sketches depend on the table's content
		st, err := os.Stat(cfg.IDFFile)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "idf %d %d\n", st.Size(), st.ModTime().UnixNano())
	}
	if tmp == "" {
		tmp = os.TempDir()
	}
	return filepath.Join(tmp, "neardup-state-"+hex.EncodeToString(h.Sum(nil))[:24]), nil
}

func ckptPath(dir string, file int) string {
	return filepath.Join(dir, fmt.Sprintf("file-%06d.ck", file))
}

// ckptWriter writes one file's checkpoint.
type ckptWriter struct {
	f     *atomicfile.File
	w     *bufio.Writer
	crc   hash.Hash32
	count uint64
	buf   []byte
	sk    []byte
}

func newCkptWriter(path string) (*ckptWriter, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	c := &ckptWriter{f: f, crc: crc32.NewIEEE()}
	c.w = bufio.NewWriterSize(io.MultiWriter(f, c.crc), 1<<16)
	c.w.WriteString(ckptMagic)
	c.w.WriteByte(ckptVersion)
	return c, nil
}

func (c *ckptWriter) add(codec SketchCodec, d *rawDoc, s DocSketch) error {
	b := append(c.buf[:0], ckptRecord)
	b = binary.AppendUvarint(b, uint64(len(d.id)))
	b = append(b, d.id...)
	b = binary.AppendUvarint(b, uint64(d.n))
	if s == nil {
		b = binary.AppendUvarint(b, 0)
	} else {
		c.sk = codec.AppendSketch(c.sk[:0], s)
		b = binary.AppendUvarint(b, uint64(len(c.sk))+1)
		b = append(b, c.sk...)
	}
	c.buf = b
	c.count++
	_, err := c.w.Write(b)
	return err
}

// commit writes the trailer and renames the checkpoint into place.
func (c *ckptWriter) commit(skipped int, inputBytes int64) error {
	b := []byte{ckptEnd}
	b = binary.AppendUvarint(b, c.count)
	b = binary.AppendUvarint(b, uint64(skipped))
	b = binary.AppendUvarint(b, uint64(inputBytes))
	c.w.Write(b)
	if err := c.w.Flush(); err != nil {
		c.f.Abort()
		return err
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], c.crc.Sum32())
	if _, err := c.f.Write(sum[:]); err != nil {
		c.f.Abort()
		return err
	}
	return c.f.Commit()
}

func (c *ckptWriter) abort() { c.f.Abort() }

// ckptTrailer is what a checkpoint says of its file.
type ckptTrailer struct {
	count, skipped uint64
	inputBytes     int64
}

// readCheckpoint verifies the checkpoint at path and, when it is whole,
// calls fn for each document in order. A missing file returns
// os.ErrNotExist; a damaged one an error wrapping errCheckpoint, before fn
// is ever called.
func readCheckpoint(path string, codec SketchCodec, fn func(id string, n int, s DocSketch) error) (ckptTrailer, error) {
	var tr ckptTrailer
	data, err := os.ReadFile(path)
	if err != nil {
		return tr, err
	}
	bad := func(why string) (ckptTrailer, error) {
		return tr, fmt.Errorf("%s: %w: %s", path, errCheckpoint, why)
	}
	if len(data) < len(ckptMagic)+1+4 || string(data[:4]) != ckptMagic {
		return bad("no checkpoint header")
	}
	if data[4] != ckptVersion {
		return bad(fmt.Sprintf("version %d, this neardup reads %d", data[4], ckptVersion))
	}
	body := data[:len(data)-4]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return bad("checksum mismatch")
	}
	// Two passes: decode everything first, so that a damaged checkpoint
	// never feeds half a file to the finder.
	for pass := 0; pass < 2; pass++ {
		r := bytes.NewReader(body[5:])
		var count uint64
		for {
			kind, err := r.ReadByte()
			if err != nil {
				return bad("no trailer")
			}
			if kind == ckptEnd {
				var vals [3]uint64
				for i := range vals {
					if vals[i], err = binary.ReadUvarint(r); err != nil {
						return bad("short trailer")
					}
				}
				if vals[0] != count || r.Len() != 0 {
					return bad("trailer does not match the records")
				}
				tr = ckptTrailer{count: vals[0], skipped: vals[1], inputBytes: int64(vals[2])}
				break
			}
			if kind != ckptRecord {
				return bad("unknown record kind")
			}
			idLen, err := binary.ReadUvarint(r)
			if err != nil || idLen > uint64(r.Len()) {
				return bad("short record")
			}
			id := make([]byte, idLen)
			r.Read(id)
			n, err := binary.ReadUvarint(r)
			if err != nil {
				return bad("short record")
			}
			skLen, err := binary.ReadUvarint(r)
			if err != nil || skLen > uint64(r.Len())+1 {
				return bad("short record")
			}
			var s DocSketch
			if skLen > 0 {
				sk := make([]byte, skLen-1)
				r.Read(sk)
				if s, err = codec.DecodeSketch(sk); err != nil {
					return bad(err.Error())
				}
			}
			count++
			if pass == 1 {
				if err := fn(string(id), int(n), s); err != nil {
					return tr, err
				}
			}
		}
	}
	return tr, nil
}

// checkpointer writes the checkpoints of a run in input order, from the
// collector goroutine. A nil *checkpointer does nothing.
type checkpointer struct {
	dir     string
	codec   SketchCodec
	names   []string
	resumed []bool // the file's documents came from its checkpoint
	cur     int    // file being written
	w       *ckptWriter
	// Per file, counted by the collector (which calls add) in input
	// order, so they are complete when a document of a later file comes.
	skipped []int
	bytes   []int64
	damaged []bool // files found damaged get no checkpoint: a rerun reads them again and reports the damage
}

// add records d (of file d.file) after every document before it.
func (c *checkpointer) add(d *rawDoc, s DocSketch) error {
	if c == nil {
		return nil
	}
	for c.cur < d.file {
		if err := c.close(c.cur); err != nil {
			return err
		}
		c.cur++
	}
	// d.pre, not resumed[d.file]: the collector sets that flag only
	// after the file's last document.
	if d.pre || c.names[d.file] == "-" {
		return nil
	}
	if c.w == nil {
		w, err := newCkptWriter(ckptPath(c.dir, d.file))
		if err != nil {
			return err
		}
		c.w = w
	}
	return c.w.add(c.codec, d, s)
}

// close commits file k's checkpoint, writing an empty one for a file
// without documents.
func (c *checkpointer) close(k int) error {
	if c.resumed[k] || c.names[k] == "-" {
		return nil
	}
	if c.damaged[k] {
		c.abort()
		c.w = nil
		return nil
	}
	if c.w == nil {
		w, err := newCkptWriter(ckptPath(c.dir, k))
		if err != nil {
			return err
		}
		c.w = w
	}
	err := c.w.commit(c.skipped[k], c.bytes[k])
	c.w = nil
	return err
}

// finish commits the checkpoints of the files not yet closed.
func (c *checkpointer) finish() error {
	if c == nil {
		return nil
	}
	for ; c.cur < len(c.names); c.cur++ {
		if err := c.close(c.cur); err != nil {
			return err
		}
	}
	return nil
}

// abort drops a checkpoint being written.
func (c *checkpointer) abort() {
	if c != nil && c.w != nil {
		c.w.abort()
	}
}
