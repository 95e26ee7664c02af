package store

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/internal/mix"
	"github.com/neardup/neardup/sketch"
)

// RedisFormatVersion is the newest version of the key layout of a Redis
// index (docs/format/redis.md), stored in its meta hash: 1 for the
// one-slot layout, 2 for the spread layout (redis_spread.go), which a
// build reading only version 1 refuses. OpenRedis refuses a newer one with
// ErrVersion. Version 3 (redisFormatSets), in either layout (meta's
// layout field), is an index whose records may carry shingle sets and
// whose new documents do; version 4 (redisFormatBare) one whose records
// may also leave out the signature their set gives (flagBare), the format
// of a new index with sets; estimate-only indexes keep 1 or 2, which
// builds that do not know sets still open.
const RedisFormatVersion = 4

// redisFormatSets is the format of a Redis index that keeps shingle sets,
// redisFormatBare of one whose records may also be bare (flagBare).
const (
	redisFormatSets = 3
	redisFormatBare = 4
)

// redisBucketBits is the number of bits of the id and posting buckets of a
// new Redis index: 2^18 hashes each. Redis scans a listpack-encoded hash to
// find a field, so a posting read or write costs in proportion to its
// bucket's entries: at 1M MinHash documents (13 million postings) a bucket
// holds about 50 entries with 18 bits against about 200 with 16, the bits
// of format 1's first indexes (docs/bench/store.md). An index keeps the
// bits it was created with (meta's bucket_bits).
const redisBucketBits = 18

// recordsPerBucket is the number of consecutive sequence numbers whose
// records share one hash.
const recordsPerBucket = 128

// Redis is an index held in Redis: one server (with its replicas) or a
// Redis Cluster, shared by any number of processes. Every key of an index
// carries the hash tag of its prefix ({NAME}), so that the whole index is
// in one hash slot and one Lua script can check and add atomically, on a
// single server and on a cluster alike. The layout and the protocol are in
// docs/format/redis.md.
//
// A Redis index is safe for concurrent use, by goroutines and by
// processes: of near-duplicates sent at once through any number of
// processes exactly one is added. An acknowledged write is as durable as
// the server's persistence makes it (appendfsync always: on disk before
// the reply).
type Redis struct {
	keyer
	c     redis.UniversalClient
	loc   string // the URL without its password
	tag   string // {NAME}
	bits  uint   // bucket bits
	ronly bool
	ver   int // the format version at open (Stats)
	// spread is the layout of docs/format/redis.md "Spread over the
	// masters" (redis_spread.go): per-bucket hash tags, no atomic script.
	spread bool
	// pendingTimeout is how long a spread writer waits for a pending
	// duplicate before aborting it.
	pendingTimeout time.Duration
	// spreadStop is a test hook: a spread write stops with its documents
	// pending, as a writer that dies before its commit.
	spreadStop bool
	// add is the one-slot add script (a test runs an older build's
	// beside it).
	add *redis.Script

	pool   sync.Pool // *scratch
	closed atomic.Bool
	health redisHealth // Status, Health
}

// redisURL is a parsed index URL.
type redisURL struct {
	opts    *redis.UniversalOptions
	cluster bool
	prefix  string
	layout  string // "", layoutOne or layoutSpread
	loc     string
}

// parseRedisURL parses redis://[user:password@]HOST:PORT/DB?prefix=NAME
// and redis+cluster://HOST:PORT,HOST:PORT/?prefix=NAME (rediss for TLS).
func parseRedisURL(raw string) (*redisURL, error) {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: index URL %q: %s", ErrParams, Redact(raw), fmt.Sprintf(format, a...))
	}
	cluster := strings.HasPrefix(raw, "redis+cluster://") || strings.HasPrefix(raw, "rediss+cluster://")
	u, err := url.Parse(strings.Replace(raw, "+cluster://", "://", 1))
	if err != nil {
		return nil, bad("%v", errors.Unwrap(err))
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, bad("scheme %q: want redis:// or redis+cluster://", u.Scheme)
	}
	q := u.Query()
	r := &redisURL{cluster: cluster, prefix: q.Get("prefix")}
	if r.prefix == "" {
		r.prefix = "neardup"
	}
	if len(r.prefix) > 200 || strings.ContainsAny(r.prefix, "{}") {
		return nil, bad("prefix %q: at most 200 bytes, without { or }", r.prefix)
	}
	q.Del("prefix")
	if q.Has("layout") {
		r.layout = q.Get("layout")
		if r.layout != layoutOne && r.layout != layoutSpread {
			return nil, bad("layout %q: want one or spread", r.layout)
		}
		q.Del("layout")
	}
	if len(q) > 0 {
		return nil, bad("unknown parameter %q (only prefix and layout are accepted)", slices.Sorted(func(yield func(string) bool) {
			for k := range q {
				if !yield(k) {
					return
				}
			}
		})[0])
	}
	if u.Host == "" {
		return nil, bad("no HOST:PORT")
	}
	o := &redis.UniversalOptions{Addrs: strings.Split(u.Host, ","), IsClusterMode: cluster,
		DialTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, MaxRetries: -1}
	for i, a := range o.Addrs {
		if !strings.Contains(a, ":") {
			o.Addrs[i] = a + ":6379"
		}
	}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
	}
	if o.Password == "" {
		// Kept out of the URL, and so out of ps and shell histories.
		pw, err := redisPassword()
		if err != nil {
			return nil, bad("%v", err)
		}
		o.Password = pw
	}
	if db := strings.Trim(u.Path, "/"); db != "" {
		n, err := strconv.Atoi(db)
		if err != nil || n < 0 {
			return nil, bad("database %q: want a number", db)
		}
		if cluster && n != 0 {
			return nil, bad("Redis Cluster has only database 0")
		}
		o.DB = n
	}
	if !cluster && len(o.Addrs) > 1 {
		return nil, bad("several hosts: use redis+cluster:// for a Redis Cluster")
	}
	if u.Scheme == "rediss" {
		tc, err := redisTLS()
		if err != nil {
			return nil, bad("%v", err)
		}
		o.TLSConfig = tc
	}
	r.opts = o
	r.loc = Redact(raw)
	return r, nil
}

// The environment variables that configure Redis connections beside the
// URL (docs/format/redis.md, "Passwords and TLS").
const (
	// EnvRedisPassword is the password, when the URL has none.
	EnvRedisPassword = "NEARDUP_REDIS_PASSWORD"
	// EnvRedisPasswordFile names a file holding the password (its first
	// line), when the URL has none; it wins over EnvRedisPassword.
	EnvRedisPasswordFile = "NEARDUP_REDIS_PASSWORD_FILE"
	// EnvRedisCA names a PEM file of the certificate authorities that a
	// rediss:// server's certificate must chain to, instead of the
	// system's.
	EnvRedisCA = "NEARDUP_REDIS_CA_FILE"
	// EnvRedisCert and EnvRedisKey name the PEM client certificate and
	// key sent to a rediss:// server that asks for one (tls-auth-clients).
	EnvRedisCert = "NEARDUP_REDIS_CERT_FILE"
	EnvRedisKey  = "NEARDUP_REDIS_KEY_FILE"
)

// redisPassword returns the password of EnvRedisPasswordFile, else of
// EnvRedisPassword, else redis-cli's REDISCLI_AUTH, else "".
func redisPassword() (string, error) {
	if f := os.Getenv(EnvRedisPasswordFile); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("the password file (%s): %v", EnvRedisPasswordFile, err)
		}
		pw, _, _ := strings.Cut(string(b), "\n")
		if pw = strings.TrimRight(pw, "\r"); pw == "" {
			return "", fmt.Errorf("the password file %s (%s) is empty", f, EnvRedisPasswordFile)
		}
		return pw, nil
	}
	if pw := os.Getenv(EnvRedisPassword); pw != "" {
		return pw, nil
	}
	return os.Getenv("REDISCLI_AUTH"), nil
}

// redisTLS returns the TLS configuration of a rediss:// connection:
// TLS 1.2 or later, the server's certificate verified against the
// system's authorities or EnvRedisCA's, and EnvRedisCert/EnvRedisKey's
// client certificate when both are set.
func redisTLS() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12} // the server name comes from each address
	if f := os.Getenv(EnvRedisCA); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("the certificate authorities (%s): %v", EnvRedisCA, err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no PEM certificate in %s (%s)", f, EnvRedisCA)
		}
	}
	cert, key := os.Getenv(EnvRedisCert), os.Getenv(EnvRedisKey)
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("a client certificate needs both %s and %s", EnvRedisCert, EnvRedisKey)
	}
	if cert != "" {
		c, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("the client certificate (%s, %s): %v", EnvRedisCert, EnvRedisKey, err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	return tc, nil
}

// Redact removes the password from an index URL, for messages.
func Redact(raw string) string {
	start := 0 // of the authority: after "SCHEME://", or "//" alone
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	} else if strings.HasPrefix(raw, "//") {
		start = 2
	} else {
		return raw
	}
	j := strings.LastIndex(raw, "@")
	if j < start {
		return raw
	}
	userinfo := raw[start:j]
	if k := strings.Index(userinfo, ":"); k >= 0 {
		return raw[:start] + userinfo[:k] + ":xxxxx" + raw[j:]
	}
	return raw
}

func dialRedis(raw string) (*redisURL, redis.UniversalClient, error) {
	u, err := parseRedisURL(raw)
	if err != nil {
		return nil, nil, err
	}
	c := redis.NewUniversalClient(u.opts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrUnreachable, u.loc, err)
	}
	return u, c, nil
}

// metaKey and friends name the keys of an index (docs/format/redis.md).
func (r *Redis) metaKey() string { return r.tag + ":meta" }
func (r *Redis) seqKey() string  { return r.tag + ":seq" }
func (r *Redis) docsKey() string { return r.tag + ":docs" }

func (r *Redis) idBucket(id string) string {
	return r.bucketKey(":i:", strconv.FormatUint(xxh3.HashString(id)>>(64-r.bits), 16))
}

func (r *Redis) recordBucket(seq uint64) string {
	return r.bucketKey(":r:", strconv.FormatUint(seq/recordsPerBucket, 10))
}

// postingField is the field of the posting of key in table t: u16be
// table, u64be key.
func postingField(dst []byte, t int, key uint64) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(t))
	return binary.BigEndian.AppendUint64(dst, key)
}

func (r *Redis) postingBucket(t int, key uint64) string {
	return r.bucketKey(":p:", strconv.FormatUint(mix.Fmix64(key^uint64(t)*0x9e3779b97f4a7c15)>>(64-r.bits), 16))
}

func be8(seq uint64) string { return string(binary.BigEndian.AppendUint64(nil, seq)) }

var createScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'format', ARGV[1], 'params', ARGV[2], 'bucket_bits', ARGV[3], 'layout', ARGV[4])
if ARGV[5] ~= '0' then redis.call('HSET', KEYS[1], 'extraction', ARGV[5]) end
return 1`)

// CreateRedis creates an empty index for the sketch specification sp at
// a Redis URL (see parseRedisURL), refusing what Create refuses. An index
// already under the prefix is ErrExists.
func CreateRedis(raw string, sp sketch.Spec, opts Options) (*Redis, error) {
	rp, err := resolveNew(sp)
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(rp)
	if err != nil {
		return nil, err
	}
	ext, err := extractionAtCreate(rp, opts)
	if err != nil {
		return nil, err
	}
	u, c, err := dialRedis(raw)
	if err != nil {
		return nil, err
	}
	layout := u.layout
	if layout == "" {
		layout = defaultLayout
	}
	r, err := newRedis(u, c, rp, redisBucketBits, layout, opts)
	if err != nil {
		c.Close()
		return nil, err
	}
	ver := 1
	if r.spread {
		ver = spreadFormatVersion
	}
	if rp.Method == sketch.MinHash && !opts.EstimateOnly {
		ver = redisFormatBare
		r.sets.Store(true)
		r.bare.Store(true)
	}
	r.ver = ver
	r.extraction = ext
	ok, err := createScript.Run(context.Background(), c, []string{r.metaKey()}, ver, js, redisBucketBits, layout, ext).Int()
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("store: create %s: %w", u.loc, err)
	}
	if ok == 0 {
		c.Close()
		return nil, fmt.Errorf("%w: %s (prefix %q)", ErrExists, u.loc, u.prefix)
	}
	return r, nil
}

// OpenRedis opens the index at a Redis URL. No index under the prefix is
// ErrNotIndex; a newer layout ErrVersion; a server that does not answer
// ErrUnreachable. Options.ReadOnly refuses writes; the other options are
// those of the embedded store and are ignored.
func OpenRedis(raw string, opts Options) (*Redis, error) {
	u, c, err := dialRedis(raw)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Redis, error) {
		c.Close()
		return nil, err
	}
	tag := "{" + u.prefix + "}"
	meta, err := c.HGetAll(context.Background(), tag+":meta").Result()
	if err != nil {
		return fail(fmt.Errorf("store: open %s: %w", u.loc, err))
	}
	if len(meta) == 0 {
		return fail(fmt.Errorf("%w: no index with prefix %q at %s (no key %s:meta)", ErrNotIndex, u.prefix, u.loc, tag))
	}
	ver, err := strconv.Atoi(meta["format"])
	if err != nil {
		return fail(fmt.Errorf("%w: %s: format %q", ErrCorrupt, u.loc, meta["format"]))
	}
	if ver > RedisFormatVersion {
		return fail(fmt.Errorf("%w: %s holds format %d, this program reads up to %d", ErrVersion, u.loc, ver, RedisFormatVersion))
	}
	p, err := decodeSpec([]byte(meta["params"]))
	if err != nil {
		return fail(fmt.Errorf("%w: %s: params: %v", ErrCorrupt, u.loc, err))
	}
	bits, err := strconv.Atoi(meta["bucket_bits"])
	if err != nil || bits < 1 || bits > 32 {
		return fail(fmt.Errorf("%w: %s: bucket_bits %q", ErrCorrupt, u.loc, meta["bucket_bits"]))
	}
	layout, err := metaLayout(u, meta, ver)
	if err != nil {
		return fail(err)
	}
	ext, err := parseExtraction(meta["extraction"])
	if err != nil {
		return fail(fmt.Errorf("%w: %s: %v", ErrCorrupt, u.loc, err))
	}
	r, err := newRedis(u, c, p, uint(bits), layout, opts)
	if err != nil {
		return fail(err)
	}
	r.ver = ver
	r.extraction = ext
	r.sets.Store(ver >= redisFormatSets)
	r.bare.Store(ver >= redisFormatBare)
	return r, nil
}

func newRedis(u *redisURL, c redis.UniversalClient, p sketch.Spec, bits uint, layout string, opts Options) (*Redis, error) {
	k, err := newKeyer(p)
	if err != nil {
		return nil, err
	}
	r := &Redis{keyer: k, c: c, loc: u.loc, tag: "{" + u.prefix + "}", bits: bits, ronly: opts.ReadOnly,
		spread: layout == layoutSpread, pendingTimeout: defaultPendingTimeout, add: addScript}
	r.pool.New = func() any { return &scratch{} }
	return r, nil
}

// Spec returns the index's sketch specification, resolved.
func (r *Redis) Spec() sketch.Spec { return r.spec }

// NewSketcher returns a Sketcher with the index's parameters.
func (r *Redis) NewSketcher() (*Sketcher, error) { return newSketcher(r.spec, r.sets.Load()) }

// Location is the index URL without its password.
func (r *Redis) Location() string { return r.loc }

// Len returns the number of documents (0 when Redis does not answer).
func (r *Redis) Len() int64 {
	n, _ := r.c.Get(context.Background(), r.docsKey()).Int64()
	return n
}

func (r *Redis) acquire() (*scratch, error) {
	if r.closed.Load() {
		return nil, ErrClosed
	}
	return r.pool.Get().(*scratch), nil
}

func (r *Redis) release(sc *scratch) { r.pool.Put(sc) }

// Close closes the connections.
func (r *Redis) Close() error {
	if r.closed.Swap(true) {
		return nil
	}
	r.stopHealth()
	return r.c.Close()
}

// redisErr names the index in an error from Redis.
func (r *Redis) redisErr(err error) error {
	if err == nil {
		return nil
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, redis.ErrClosed) || transientReply(err) {
		return fmt.Errorf("%w: %s: %v", ErrUnreachable, r.loc, err)
	}
	return fmt.Errorf("store: %s: %w", r.loc, err)
}

// transientReply reports whether err is a Redis error reply that says the
// server cannot answer yet, not that the request is wrong: LOADING (a
// restarted server reading its data back), BUSY (a script running),
// MASTERDOWN, TRYAGAIN and CLUSTERDOWN. Such a request changed nothing
// and may be retried, so it is ErrUnreachable (503 with Retry-After), not
// an internal error (a restarted Redis answered 500 to check-and-adds
// while it loaded: issue 32 item 5).
func transientReply(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	for _, p := range []string{"LOADING ", "BUSY ", "MASTERDOWN ", "TRYAGAIN ", "CLUSTERDOWN "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// decodeSeqs appends the sequence numbers of a posting value (u64be each).
func decodeSeqs(dst []uint64, v string) ([]uint64, error) {
	if len(v)%8 != 0 {
		return dst, fmt.Errorf("%w: posting value of %d bytes", ErrCorrupt, len(v))
	}
	for i := 0; i < len(v); i += 8 {
		dst = append(dst, binary.BigEndian.Uint64([]byte(v[i:i+8])))
	}
	return dst, nil
}

// lookup reads, in one round trip, the sequence counter and then the
// postings of every key of keys (keys[d] are the keys of document d):
// seqs[d] are the candidates of document d, each once, increasing; every
// document numbered at most snap was committed before the postings were
// read, so seqs holds all of those that share a key.
func (r *Redis) lookup(ctx context.Context, keys [][]uint64) (seqs [][]uint64, snap uint64, err error) {
	pipe := r.c.Pipeline()
	seqCmd := pipe.Get(ctx, r.seqKey())
	cmds := make([][]*redis.StringCmd, len(keys))
	var field []byte
	for d, ks := range keys {
		for t, k := range ks {
			field = postingField(field[:0], t, k)
			cmds[d] = append(cmds[d], pipe.HGet(ctx, r.postingBucket(t, k), string(field)))
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, r.redisErr(err)
	}
	if v, err := seqCmd.Uint64(); err == nil {
		snap = v
	} else if !errors.Is(err, redis.Nil) {
		return nil, 0, r.redisErr(err)
	}
	seqs = make([][]uint64, len(keys))
	for d := range cmds {
		for _, c := range cmds[d] {
			v, err := c.Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				return nil, 0, r.redisErr(err)
			}
			if seqs[d], err = decodeSeqs(seqs[d], v); err != nil {
				return nil, 0, err
			}
		}
		if len(seqs[d]) > 1 {
			slices.Sort(seqs[d])
			seqs[d] = slices.Compact(seqs[d])
		}
	}
	return seqs, snap, nil
}

// records reads, in one round trip, the records of the sequence numbers
// in seqs (each a list); a removed one is absent from the map, and so is
// one not committed in the spread layout.
func (r *Redis) records(ctx context.Context, seqs ...[]uint64) (map[uint64]string, error) {
	pipe := r.c.Pipeline()
	cmds := map[uint64]*redis.StringCmd{}
	for _, ss := range seqs {
		for _, s := range ss {
			if cmds[s] == nil {
				cmds[s] = pipe.HGet(ctx, r.recordBucket(s), be8(s))
			}
		}
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, r.redisErr(err)
	}
	recs := make(map[uint64]string, len(cmds))
	for s, c := range cmds {
		v, err := c.Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, r.redisErr(err)
		}
		if r.spread {
			if v, err = committedRecord(v); err != nil {
				continue // pending: not (yet) in the index
			}
		}
		recs[s] = v
	}
	return recs, nil
}

// verifyAll appends the duplicates of sk among the candidates seqs (all:
// every candidate sharing a key), best first, at most limit.
func (r *Redis) verifyAll(dst []Match, sc *scratch, sk *sketch.Sketch, seqs []uint64, recs map[uint64]string, all bool, limit int) ([]Match, error) {
	start := len(dst)
	sc.keys = r.appendKeys(sc.keys[:0], sk)
	for _, s := range seqs {
		v, ok := recs[s]
		if !ok {
			continue // removed since the lookup
		}
		sc.recBuf = append(sc.recBuf[:0], v...)
		if err := r.readRecord(&sc.rec, sc.recBuf); err != nil {
			return dst, fmt.Errorf("%s: record %d: %w", r.loc, s, err)
		}
		var err error
		if dst, err = r.verify(dst, sc, sk, all); err != nil {
			return dst, err
		}
	}
	return sortLimit(dst, start, limit), nil
}

// Query appends to dst the duplicates of sk in the index, best first, at
// most limit of them (0: all), as Store.Query: two round trips (postings,
// then the candidates' records).
func (r *Redis) Query(dst []Match, sk sketch.Sketch, limit int) ([]Match, error) {
	return r.query(dst, &sk, false, limit)
}

// Candidates is Store.Candidates.
func (r *Redis) Candidates(dst []Match, sk sketch.Sketch) ([]Match, error) {
	return r.query(dst, &sk, true, 0)
}

func (r *Redis) query(dst []Match, sk *sketch.Sketch, all bool, limit int) ([]Match, error) {
	if err := r.checkSketch(sk); err != nil {
		return dst, err
	}
	sc, err := r.acquire()
	if err != nil {
		return dst, err
	}
	defer r.release(sc)
	if sk.Empty {
		return dst, nil
	}
	ctx := context.Background()
	seqs, _, err := r.lookup(ctx, [][]uint64{r.appendKeys(nil, sk)})
	if err != nil {
		return dst, err
	}
	recs, err := r.records(ctx, seqs[0])
	if err != nil {
		return dst, err
	}
	return r.verifyAll(dst, sc, sk, seqs[0], recs, all, limit)
}

// addScript adds documents in order, in one atomic step. KEYS[1] is the
// meta key (it routes the script to the index's hash slot); ARGV: mode
// ("c": check, "a": add), the number of documents, then per document its
// snapshot (decimal), id, id bucket key, record, whether an earlier
// document of the batch already added duplicates it ("1" or "0"), the
// number and positions (1-based, in this call) of the earlier documents of
// the call it depends on (p: a near-duplicate; -p: only the same id), the
// number of keys and that many (posting bucket key, field) pairs.
//
// The reply is {answers, S, L}: S is the sequence counter as the call
// found it and L as it left it, and the answer of a document is its new
// sequence number (added), 'dup' (an earlier duplicate of the batch is
// added), 'dupid' (its id is present) or, in check mode, a list: the
// document is held, not added, and the list holds the sequence numbers in
// its postings above its snapshot and at most S (documents committed since
// its snapshot, before this call), which the client verifies before it
// sends the document again with the snapshot L (the numbers from S+1 to L
// are documents of its batch that do not depend on it, hence not its
// near-duplicates: the client compared them in step 1). A document is
// held when it has such numbers, and so is a later document of the call
// that depends on a held one; the others are added, in the batch's order
// among themselves, and a held document is numbered after them
// (docs/format/redis.md).
var addScript = redis.NewScript(`
local tag = string.sub(KEYS[1], 1, -6)
local seqKey, docsKey, recPrefix = tag .. ':seq', tag .. ':docs', tag .. ':r:'
local check = ARGV[1] == 'c'
local n = tonumber(ARGV[2])
local last = tonumber(redis.call('GET', seqKey) or '0')
local runStart = last + 1
local out, added, held = {}, {}, {}
local a = 3
for d = 1, n do
  local snap, id, ik, rec, dup, np = tonumber(ARGV[a]), ARGV[a+1], ARGV[a+2], ARGV[a+3], ARGV[a+4] == '1', tonumber(ARGV[a+5])
  local wait = false
  for p = a + 6, a + 5 + np do
    local q = tonumber(ARGV[p])
    if q < 0 then q = -q elseif added[q] then dup = true end
    if held[q] then wait = true end
  end
  a = a + 6 + np
  local nk = tonumber(ARGV[a])
  local ka = a + 1
  a = ka + 2 * nk
  local s8 = struct.pack('>I8', last + 1)
  local cur, newer, made = {}, {}, {}
  -- the postings as they are now, read once for the check and the add.
  -- A document that may be added claims each posting with HSETNX: a new
  -- posting (the common case: a key no document had) is then written,
  -- without a read; an existing one is read. The claims are undone if
  -- the document is not added.
  local claim = not (wait or dup)
  for k = 0, nk - 1 do
    local b, f = ARGV[ka+2*k], ARGV[ka+2*k+1]
    local v = false
    if claim and redis.call('HSETNX', b, f, s8) == 1 then
      made[k] = true
    else
      v = redis.call('HGET', b, f)
    end
    cur[k] = v
    if check and v then
      for j = 1, #v, 8 do
        local s = struct.unpack('>I8', v, j)
        if s > snap and s < runStart then newer[#newer+1] = s end
      end
    end
  end
  local keep = false
  if wait or #newer > 0 then
    held[d] = true
    out[d] = newer
  elseif dup then
    out[d] = 'dup'
  elseif redis.call('HSETNX', ik, id, s8) == 0 then
    out[d] = 'dupid'
  else
    keep = true
    last = last + 1
    redis.call('HSET', recPrefix .. math.floor(last / 128), s8, rec)
    for k = 0, nk - 1 do
      if not made[k] then redis.call('HSET', ARGV[ka+2*k], ARGV[ka+2*k+1], (cur[k] or '') .. s8) end
    end
    added[d] = true
    out[d] = last
  end
  if not keep then
    for k = 0, nk - 1 do
      if made[k] then redis.call('HDEL', ARGV[ka+2*k], ARGV[ka+2*k+1]) end
    end
  end
end
if last >= runStart then
  redis.call('SET', seqKey, last)
  redis.call('INCRBY', docsKey, last - runStart + 1)
end
return {out, runStart - 1, last}`)

// Add adds a document without checking for duplicates (Store.Add).
func (r *Redis) Add(id string, sk sketch.Sketch) error {
	rs, err := r.write([]Doc{{ID: id, Sketch: sk}}, false, 0)
	if err != nil {
		return err
	}
	return rs[0].Err
}

// CheckAndAdd is Store.CheckAndAdd: of near-duplicates sent at once
// through any processes, exactly one is added.
func (r *Redis) CheckAndAdd(id string, sk sketch.Sketch, limit int) (Result, error) {
	rs, err := r.write([]Doc{{ID: id, Sketch: sk}}, true, limit)
	if err != nil {
		return Result{}, err
	}
	return rs[0], rs[0].Err
}

// AddBatch is Store.AddBatch: one script for the batch.
func (r *Redis) AddBatch(docs []Doc) ([]Result, error) { return r.write(docs, false, 0) }

// CheckAndAddBatch is Store.CheckAndAddBatch: each document is checked
// against the index and the documents of the batch added before it, in
// order; one script for the batch, then, when some documents share a key
// with the index, one round trip for their candidates' records and one
// script for them.
func (r *Redis) CheckAndAddBatch(docs []Doc, limit int) ([]Result, error) {
	return r.write(docs, true, limit)
}

// write adds docs in one RedisWrite, after checking each for duplicates
// when check is set.
func (r *Redis) write(docs []Doc, check bool, limit int) ([]Result, error) {
	w, err := r.NewWrite(check, limit)
	if err != nil {
		return nil, err
	}
	if err := w.Add(docs); err != nil {
		return nil, err
	}
	return w.Commit()
}

// sameIDs returns, for each document of todo, the earlier documents of
// todo with the same id (nil when the batch repeats no id).
func sameIDs(docs []pendingDoc, todo []int) [][]int {
	if len(todo) < 2 {
		return nil
	}
	seen := make(map[string][]int, len(todo))
	var deps [][]int
	for _, i := range todo {
		id := docs[i].id
		if js := seen[id]; len(js) > 0 {
			if deps == nil {
				deps = make([][]int, len(docs))
			}
			deps[i] = slices.Clone(js)
		}
		seen[id] = append(seen[id], i)
	}
	return deps
}

// removeScript deletes a document atomically: its id, its record and its
// postings. ARGV: id, id bucket key, seq (u64be), record bucket key, number
// of keys, then (posting bucket key, field) pairs. It replies 0 when the
// id no longer maps to seq (a concurrent remove or add): the client reads
// again.
var removeScript = redis.NewScript(`
local tag = string.sub(KEYS[1], 1, -6)
local id, ik, s8, rk, nk = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
if redis.call('HGET', ik, id) ~= s8 then return 0 end
redis.call('HDEL', ik, id)
redis.call('HDEL', rk, s8)
for k = 0, nk - 1 do
  local b, f = ARGV[6+2*k], ARGV[7+2*k]
  local v = redis.call('HGET', b, f)
  if v then
    local kept = {}
    for j = 1, #v, 8 do
      local e = string.sub(v, j, j + 7)
      if e ~= s8 then kept[#kept+1] = e end
    end
    if #kept == 0 then redis.call('HDEL', b, f) else redis.call('HSET', b, f, table.concat(kept)) end
  end
end
redis.call('DECR', tag .. ':docs')
return 1`)

// get reads the sequence number and the record of id into sc.rec.
func (r *Redis) get(ctx context.Context, sc *scratch, id string) (uint64, error) {
	v, err := r.c.HGet(ctx, r.idBucket(id), id).Result()
	if errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if err != nil {
		return 0, r.redisErr(err)
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: %s: id %q maps to %d bytes", ErrCorrupt, r.loc, id, len(v))
	}
	seq := binary.BigEndian.Uint64([]byte(v))
	rec, err := r.c.HGet(ctx, r.recordBucket(seq), v).Result()
	if errors.Is(err, redis.Nil) {
		return seq, errMissing // removed between the two reads
	}
	if err != nil {
		return 0, r.redisErr(err)
	}
	if r.spread {
		if rec, err = committedRecord(rec); err != nil {
			return seq, err
		}
	}
	sc.recBuf = append(sc.recBuf[:0], rec...)
	if err := r.readRecord(&sc.rec, sc.recBuf); err != nil {
		return 0, fmt.Errorf("%s: record of %q: %w", r.loc, id, err)
	}
	if string(sc.rec.id) != id {
		return 0, fmt.Errorf("%w: %s: id %q maps to the record of %q", ErrCorrupt, r.loc, id, sc.rec.id)
	}
	return seq, nil
}

// Remove deletes the document id with its record and postings, in one
// script (Store.Remove).
func (r *Redis) Remove(id string) error {
	if r.ronly {
		return fmt.Errorf("store: %s is open read-only", r.loc)
	}
	if err := checkID(id); err != nil {
		return err
	}
	if r.spread {
		return r.spreadRemove(id)
	}
	sc, err := r.acquire()
	if err != nil {
		return err
	}
	defer r.release(sc)
	ctx := context.Background()
	var field []byte
	for range 100 {
		seq, err := r.get(ctx, sc, id)
		if err == errMissing {
			continue
		}
		if err != nil {
			return err
		}
		sc.keys = sc.keys[:0]
		if sc.rec.flags&flagEmpty == 0 {
			sc.keys = r.appendKeys(sc.keys, &sketch.Sketch{Sig: sc.rec.sig, FP: sc.rec.fp})
		}
		args := []any{id, r.idBucket(id), be8(seq), r.recordBucket(seq), len(sc.keys)}
		for t, k := range sc.keys {
			field = postingField(field[:0], t, k)
			args = append(args, r.postingBucket(t, k), string(field))
		}
		ok, err := removeScript.Run(ctx, r.c, []string{r.metaKey()}, args...).Int()
		if err != nil {
			return r.redisErr(err)
		}
		if ok == 1 {
			return nil
		}
	}
	return fmt.Errorf("store: %s: remove %q: the id kept changing", r.loc, id)
}

// Get returns the sketch stored under id (ErrNotFound when absent).
func (r *Redis) Get(id string) (sketch.Sketch, error) {
	if err := checkID(id); err != nil {
		return sketch.Sketch{}, err
	}
	sc, err := r.acquire()
	if err != nil {
		return sketch.Sketch{}, err
	}
	defer r.release(sc)
	_, err = r.get(context.Background(), sc, id)
	if err == errMissing {
		return sketch.Sketch{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if err != nil {
		return sketch.Sketch{}, err
	}
	sk, err := recordSketch(&sc.rec)
	if err != nil {
		return sketch.Sketch{}, fmt.Errorf("%s: record of %q: %w", r.loc, id, err)
	}
	sk.Sig, sk.Set = slices.Clone(sk.Sig), slices.Clone(sk.Set)
	return sk, nil
}

// eachBuckets is how many record buckets Each reads per round trip.
const eachBuckets = 64

// Each calls fn with every document in the order they were added (by
// sequence number), stopping at the first error; as Store.Each.
func (r *Redis) Each(fn func(id string, sk sketch.Sketch) error) error {
	sc, err := r.acquire()
	if err != nil {
		return err
	}
	defer r.release(sc)
	ctx := context.Background()
	last, err := r.c.Get(ctx, r.seqKey()).Uint64()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return r.redisErr(err)
	}
	type entry struct {
		seq uint64
		rec string
	}
	var es []entry
	for b := uint64(0); b <= last/recordsPerBucket; b += eachBuckets {
		pipe := r.c.Pipeline()
		var cmds []*redis.MapStringStringCmd
		for i := b; i < b+eachBuckets && i <= last/recordsPerBucket; i++ {
			cmds = append(cmds, pipe.HGetAll(ctx, r.recordBucket(i*recordsPerBucket)))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return r.redisErr(err)
		}
		for _, c := range cmds {
			es = es[:0]
			for f, v := range c.Val() {
				if len(f) != 8 {
					return fmt.Errorf("%w: %s: record field of %d bytes", ErrCorrupt, r.loc, len(f))
				}
				if r.spread {
					if v, err = committedRecord(v); err != nil {
						continue // pending: not yet in the index
					}
				}
				es = append(es, entry{binary.BigEndian.Uint64([]byte(f)), v})
			}
			slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.seq, b.seq) })
			for _, e := range es {
				sc.recBuf = append(sc.recBuf[:0], e.rec...)
				if err := r.readRecord(&sc.rec, sc.recBuf); err != nil {
					return fmt.Errorf("%s: record %d: %w", r.loc, e.seq, err)
				}
				sk, err := recordSketch(&sc.rec)
				if err != nil {
					return fmt.Errorf("%s: record %d: %w", r.loc, e.seq, err)
				}
				if r.spec.Method != sketch.MinHash {
					sk.Sig = nil
				}
				if err := fn(string(sc.rec.id), sk); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Stats returns the index's statistics: Dir is the URL (without its
// password) and RedisUsedBytes the memory of the Redis servers (all their
// data, not only this index's).
func (r *Redis) Stats() (Stats, error) {
	if r.closed.Load() {
		return Stats{}, ErrClosed
	}
	ctx := context.Background()
	// docs and seq in one round trip: one state of the index.
	pipe := r.c.Pipeline()
	docsCmd, seqCmd := pipe.Get(ctx, r.docsKey()), pipe.Get(ctx, r.seqKey())
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Stats{}, r.redisErr(err)
	}
	docs, err := docsCmd.Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return Stats{}, r.redisErr(err)
	}
	seq, err := seqCmd.Uint64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return Stats{}, r.redisErr(err)
	}
	st := Stats{Dir: r.loc, Backend: "redis", FormatVersion: r.ver, Sets: r.sets.Load(), Extraction: r.extraction, Spec: r.spec, Docs: docs, Tables: r.tables, RedisSeq: seq}
	if st.Sets {
		st.FormatVersion = redisFormatSets
	}
	if r.bare.Load() {
		st.FormatVersion = redisFormatBare
	}
	used, err := r.usedMemory(ctx)
	if err != nil {
		return Stats{}, err
	}
	st.RedisUsedBytes = used
	st.RedisDurability = r.durability(ctx)
	if docs > 0 {
		st.BytesPerDoc = float64(used) / float64(docs)
	}
	return st, nil
}

// eachMaster calls fn with the server, or with each master of the
// cluster (concurrently).
func (r *Redis) eachMaster(ctx context.Context, fn func(context.Context, *redis.Client) error) error {
	switch c := r.c.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, c)
	}
	return fmt.Errorf("store: %s: unexpected client %T", r.loc, r.c)
}

// usedMemory sums used_memory over the server or the cluster's masters.
func (r *Redis) usedMemory(ctx context.Context) (uint64, error) {
	var total atomic.Uint64
	one := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			return err
		}
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
				n, _ := strconv.ParseUint(v, 10, 64)
				total.Add(n)
			}
		}
		return nil
	}
	err := r.eachMaster(ctx, one)
	return total.Load(), r.redisErr(err)
}

// The values of Stats.RedisDurability, strongest first.
const (
	// DurabilityAlways: appendonly yes, appendfsync always: nothing
	// acknowledged is lost when redis-server is killed or the machine
	// crashes.
	DurabilityAlways = "always"
	// DurabilityEverysec: appendonly yes, appendfsync everysec: a kill of
	// redis-server while a background fsync is slow (during an AOF rewrite,
	// on a busy disk) or a crash of the machine can lose up to about 2 s
	// of acknowledged documents (docs/format/redis.md, "Durability").
	DurabilityEverysec = "everysec"
	// DurabilityNoFsync: appendonly yes, appendfsync no.
	DurabilityNoFsync = "no-fsync"
	// DurabilitySnapshots: no append-only file: everything since the last
	// RDB snapshot, if any, is lost.
	DurabilitySnapshots = "snapshots-only"
	// DurabilityUnknown: CONFIG GET is refused (a managed Redis).
	DurabilityUnknown = "unknown"
)

// durability returns the weakest persistence of the masters (CONFIG GET
// appendonly and appendfsync).
func (r *Redis) durability(ctx context.Context) string {
	rank := map[string]int{DurabilityAlways: 0, DurabilityEverysec: 1, DurabilityNoFsync: 2, DurabilitySnapshots: 3, DurabilityUnknown: 4}
	var mu sync.Mutex
	worst := DurabilityAlways
	err := r.eachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		d := DurabilityUnknown
		if cfg, err := c.ConfigGet(ctx, "append*").Result(); err == nil {
			switch {
			case cfg["appendonly"] != "yes":
				d = DurabilitySnapshots
			case cfg["appendfsync"] == "always":
				d = DurabilityAlways
			case cfg["appendfsync"] == "everysec":
				d = DurabilityEverysec
			case cfg["appendfsync"] == "no":
				d = DurabilityNoFsync
			}
		}
		mu.Lock()
		if rank[d] > rank[worst] {
			worst = d
		}
		mu.Unlock()
		return nil
	})
	if err != nil {
		return DurabilityUnknown
	}
	return worst
}

// DurabilityWarning returns a sentence for an index whose Redis can lose
// acknowledged documents (a durability weaker than always), else "".
func DurabilityWarning(d string) string {
	switch d {
	case DurabilityEverysec:
		return "Redis runs with appendfsync everysec: a kill of redis-server during a slow fsync (an AOF rewrite, a busy disk) or a crash of the machine can lose up to about 2 s of acknowledged documents; set appendfsync always to lose none"
	case DurabilityNoFsync:
		return "Redis runs with appendfsync no: a crash of the machine can lose acknowledged documents; set appendfsync always to lose none"
	case DurabilitySnapshots:
		return "Redis has no append-only file (appendonly no): a restart of redis-server loses every document since its last snapshot; set appendonly yes and appendfsync always"
	case DurabilityUnknown:
		return "Redis refused CONFIG GET: its persistence is unknown, so acknowledged documents may be lost when it restarts; make sure it runs with appendonly yes and appendfsync always"
	}
	return ""
}

// validDocs returns the indexes of the documents of a batch whose id and
// sketch are valid, in order, and sets the error of every other one in
// results.
func (r *Redis) validDocs(docs []Doc, results []Result) []int {
	var todo []int
	for i := range docs {
		d := &docs[i]
		if err := checkID(d.ID); err != nil {
			results[i].Err = err
			continue
		}
		if err := r.checkSketch(&d.Sketch); err != nil {
			results[i].Err = err
			continue
		}
		todo = append(todo, i)
	}
	return todo
}
