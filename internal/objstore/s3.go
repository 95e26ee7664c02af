package objstore

//lint:file-ignore SA1019 feature/s3/manager's Uploader is deprecated for feature/s3/transfermanager, which is still v0.x (v0.4.1); the Uploader is maintained and its multipart upload is what Put needs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

func init() { openers["s3"] = openS3 }

// S3 settings. Parts of an upload are buffered in memory, partSize each,
// partConcurrency at a time.
const (
	s3PartSize        = 16 << 20
	s3PartConcurrency = 2
	// maxAttempts bounds the tries of one request (retries of throttling
	// and network errors), so that an unreachable endpoint fails in
	// seconds instead of hanging.
	maxAttempts = 3
	// checkTimeout bounds the listing that Open makes to check the bucket.
	checkTimeout = 20 * time.Second
	// readBuffer is the buffer of a read stream: the network is read in
	// pieces this large.
	readBuffer = 1 << 20
)

// s3Backend is a prefix of an S3 bucket, on AWS or an S3-compatible
// server (AWS_ENDPOINT_URL_S3).
type s3Backend struct {
	loc      string // s3://bucket/prefix, for messages
	bucket   string
	prefix   string // "" or ending in "/"
	endpoint string // a custom endpoint, or "" for AWS
	client   *s3.Client
	up       *manager.Uploader
}

// splitBucketURL splits scheme://bucket/prefix into the bucket and the key
// prefix ("" or ending in "/").
func splitBucketURL(rawURL, scheme string) (bucket, prefix string, err error) {
	rest := strings.TrimPrefix(rawURL, scheme+"://")
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("no bucket in the URL (want %s://BUCKET/PREFIX)", scheme)
	}
	if strings.ContainsAny(bucket, "?#") || strings.ContainsAny(prefix, "?#") {
		return "", "", fmt.Errorf("query strings and fragments are not supported in %s:// URLs (want %s://BUCKET/PREFIX)", scheme, scheme)
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return bucket, prefix, nil
}

// s3HTTPClient is the HTTP client of S3: it gives up on a connection
// that does not open within seconds, and on a server that does not start
// answering within a minute. (The SDK's own kind, so that AWS_CA_BUNDLE
// still works.)
func s3HTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = 5 * time.Second }).
		WithTransportOptions(func(tr *http.Transport) {
			tr.TLSHandshakeTimeout = 10 * time.Second
			tr.ResponseHeaderTimeout = 60 * time.Second
			tr.MaxIdleConnsPerHost = 16
		})
}

func openS3(ctx context.Context, rawURL string) (backend, error) {
	bucket, prefix, err := splitBucketURL(rawURL, "s3")
	if err != nil {
		return nil, err
	}
	endpoint := os.Getenv("AWS_ENDPOINT_URL_S3")
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	cfg, err := config.LoadDefaultConfig(ctx,
		config.WithHTTPClient(s3HTTPClient()),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = maxAttempts
				o.MaxBackoff = 2 * time.Second
			})
		}))
	if err != nil {
		return nil, fmt.Errorf("loading the AWS configuration: %w (check AWS_PROFILE, AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE)", err)
	}
	if cfg.Region == "" {
		// An S3-compatible server rarely cares; AWS answers a request to
		// the wrong region with a redirect naming the right one.
		cfg.Region = "us-east-1"
		if endpoint == "" {
			if r, err := manager.GetBucketRegion(ctx, s3.NewFromConfig(cfg), bucket); err == nil && r != "" {
				cfg.Region = r
			}
		}
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		// A custom endpoint (MinIO, versitygw, Ceph) rarely serves
		// bucket.host names: address buckets by path.
		o.UsePathStyle = endpoint != ""
		// Checksums only when the operation requires them: several
		// S3-compatible servers refuse the newer trailing checksums.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	b := &s3Backend{loc: rawURL, bucket: bucket, prefix: prefix, endpoint: endpoint, client: client}
	b.up = manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = s3PartSize
		u.Concurrency = s3PartConcurrency
	})
	// One listing of at most one key checks the endpoint, the credentials
	// and the bucket now, with a clear error, rather than at the first
	// read or write of a long job.
	cctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	_, err = client.ListObjectsV2(cctx, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix, MaxKeys: aws.Int32(1)})
	if err != nil {
		return nil, b.explain(err)
	}
	return b, nil
}

func (b *s3Backend) key(name string) string { return b.prefix + name }

// explain turns an SDK error into one that says what to fix, wrapping it.
func (b *s3Backend) explain(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchBucket":
			return fmt.Errorf("bucket %q does not exist (create it, or check the URL%s): %w", b.bucket, b.endpointHint(), err)
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "TokenRefreshRequired",
			"XAdminUserNotFound": // versitygw's unknown access key
			return fmt.Errorf("the S3 credentials were refused (check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE%s): %w", b.endpointHint(), err)
		case "AccessDenied", "Forbidden", "AllAccessDisabled":
			return fmt.Errorf("access denied to s3://%s/%s (check the credentials and that they may list, read and write this bucket): %w", b.bucket, b.prefix, err)
		case "PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException":
			return fmt.Errorf("bucket %q is in another region (set AWS_REGION to its region): %w", b.bucket, err)
		}
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound && (ae == nil || ae.ErrorCode() == "NotFound") {
		return fmt.Errorf("bucket %q does not exist (create it, or check the URL%s): %w", b.bucket, b.endpointHint(), err)
	}
	if strings.Contains(err.Error(), "retrieve credentials") || strings.Contains(err.Error(), "refresh cached credentials") {
		return fmt.Errorf("no usable AWS credentials (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run where an instance role is available): %w", err)
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	if errors.As(err, &oe) || errors.As(err, &de) || (errors.As(err, &ne) && ne.Timeout()) {
		where := "the S3 endpoint of AWS_REGION"
		if b.endpoint != "" {
			where = "the S3 endpoint " + b.endpoint + " (AWS_ENDPOINT_URL_S3)"
		}
		return &unreachable{msg: fmt.Sprintf("cannot reach %s: check the endpoint and the network: %v", where, err), err: err}
	}
	return err
}

func (b *s3Backend) endpointHint() string {
	if b.endpoint != "" {
		return "; the endpoint is " + b.endpoint
	}
	return ""
}

func isS3NotFound(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound") {
		return true
	}
	var re interface{ HTTPStatusCode() int }
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound && !isNoSuchBucket(err)
}

func isNoSuchBucket(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "NoSuchBucket"
}

func (b *s3Backend) open(ctx context.Context, name string) (io.ReadCloser, error) {
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: aws.String(b.key(name))})
	if err != nil {
		if isS3NotFound(err) {
			return nil, fmt.Errorf("%w (%v)", ErrNotExist, err)
		}
		return nil, b.explain(err)
	}
	size := int64(-1)
	if out.ContentLength != nil {
		size = *out.ContentLength
	}
	st := newStream(out.Body, size).(stream)
	st.tag = aws.ToString(out.ETag)
	return st, nil
}

func (b *s3Backend) put(ctx context.Context, name string, write func(io.Writer) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	uploaded := make(chan error, 1)
	go func() {
		// One upload: a single PUT when the file is smaller than a part,
		// else a multipart upload that is aborted on error. Either way
		// the object appears only once it is complete.
		_, err := b.up.Upload(ctx, &s3.PutObjectInput{Bucket: &b.bucket, Key: aws.String(b.key(name)), Body: pr})
		pr.CloseWithError(errUploadEnded) // unblocks a writer left waiting
		uploaded <- err
	}()
	werr := write(pw)
	if werr != nil {
		// The upload reads this error instead of the end of the body, and
		// so fails without completing the object.
		pw.CloseWithError(werr)
		cancel()
		if uerr := <-uploaded; uerr != nil && errors.Is(werr, errUploadEnded) {
			return b.explain(uerr) // the upload failed first: its error is the cause
		}
		return werr
	}
	pw.Close()
	if err := <-uploaded; err != nil {
		return b.explain(err)
	}
	return nil
}

// errUploadEnded is what a writer gets when the upload it feeds failed.
var errUploadEnded = errors.New("objstore: the upload ended before the write")

func (b *s3Backend) exists(ctx context.Context, name string) (bool, error) {
	_, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: aws.String(b.key(name))})
	if err != nil {
		if isS3NotFound(err) {
			return false, nil
		}
		return false, b.explain(err)
	}
	return true, nil
}

func (b *s3Backend) list(ctx context.Context, prefix string) ([]string, error) {
	names, _, err := b.listVersions(ctx, prefix)
	return names, err
}

// listVersions is list with each object's size and ETag, as the listing
// gives them (a zero Version where it did not).
func (b *s3Backend) listVersions(ctx context.Context, prefix string) ([]string, []Version, error) {
	var names []string
	var vs []Version
	p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: aws.String(b.key(prefix))})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, b.explain(err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if strings.HasSuffix(k, "/") { // a folder marker
				continue
			}
			names = append(names, strings.TrimPrefix(k, b.prefix))
			var v Version
			if o.Size != nil && aws.ToString(o.ETag) != "" {
				v = Version{Size: *o.Size, tag: aws.ToString(o.ETag)}
			}
			vs = append(vs, v)
		}
	}
	return names, vs, nil
}

func (b *s3Backend) remove(ctx context.Context, name string) error {
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: aws.String(b.key(name))})
	if err != nil && !isS3NotFound(err) {
		return b.explain(err)
	}
	return nil
}

func (b *s3Backend) close() error { return nil }

// stream is one sequential read of an object through a large buffer, so
// that the network is read in large pieces whatever the caller's reads.
type stream struct {
	body io.ReadCloser
	*bufio.Reader
	size int64
	tag  string // the version read (Version), "" when the answer did not say
}

// newStream is the download body, of the object's size bytes as the
// answer said (-1 when it did not).
func newStream(body io.ReadCloser, size int64) io.ReadCloser {
	return stream{body: body, Reader: bufio.NewReaderSize(body, readBuffer), size: max(size, -1)}
}

func (s stream) Close() error { return s.body.Close() }

// objectSize is the object's size in bytes as the answer to its
// download said it, -1 when it did not. (Not Size: the embedded
// bufio.Reader has one, its buffer's.)
func (s stream) objectSize() int64 { return s.size }

func (s stream) objectVersion() Version { return Version{Size: s.size, tag: s.tag} }

// tail reads the last n bytes with a suffix range ("bytes=-n"); the
// answer's Content-Range gives the object's size, its ETag the version.
func (b *s3Backend) tail(ctx context.Context, name string, n int64) ([]byte, Version, error) {
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: aws.String(b.key(name)), Range: aws.String("bytes=-" + strconv.FormatInt(n, 10))})
	if err != nil {
		if isS3NotFound(err) {
			return nil, Version{}, fmt.Errorf("%w (%v)", ErrNotExist, err)
		}
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() == "InvalidRange" { // an empty object
			h, herr := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: aws.String(b.key(name))})
			if herr != nil {
				return nil, Version{}, b.explain(herr)
			}
			return nil, Version{Size: aws.ToInt64(h.ContentLength), tag: aws.ToString(h.ETag)}, nil
		}
		return nil, Version{}, b.explain(err)
	}
	defer out.Body.Close()
	data, err := readAll(out.Body, make([]byte, 0, min(n, 1<<20)))
	if err != nil {
		return nil, Version{}, err
	}
	size := int64(len(data))
	if cr := aws.ToString(out.ContentRange); cr != "" {
		_, total, ok := strings.Cut(cr, "/")
		if size, err = strconv.ParseInt(total, 10, 64); !ok || err != nil || size < int64(len(data)) {
			return nil, Version{}, fmt.Errorf("the answer's Content-Range %q does not give the object's size", cr)
		}
	}
	if int64(len(data)) != min(n, size) {
		return nil, Version{}, fmt.Errorf("asked for the last %d bytes of %d, got %d: %w", n, size, len(data), io.ErrUnexpectedEOF)
	}
	return data, Version{Size: size, tag: aws.ToString(out.ETag)}, nil
}

// openRange reads the range with GETs of "bytes=A-B", each after the
// first from the bytes delivered, all of the first answer's ETag (If-Match).
func (b *s3Backend) openRange(ctx context.Context, name string, off, n int64, v Version) (io.ReadCloser, error) {
	r := &rangeReader{ctx: ctx, off: off, left: n, tag: v.tag, retryable: func(err error) bool { return retryable(ctx, err) && !errors.Is(err, ErrChanged) }}
	r.get = func(off, n int64, tag string) (io.ReadCloser, string, error) {
		in := &s3.GetObjectInput{Bucket: &b.bucket, Key: aws.String(b.key(name)), Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))}
		if tag != "" {
			in.IfMatch = aws.String(tag)
		}
		out, err := b.client.GetObject(ctx, in)
		if err != nil {
			var ae smithy.APIError
			switch {
			case isS3NotFound(err):
				return nil, "", fmt.Errorf("%w (%v)", ErrNotExist, err)
			case errors.As(err, &ae) && ae.ErrorCode() == "PreconditionFailed":
				return nil, "", fmt.Errorf("%w (%v)", ErrChanged, err)
			case errors.As(err, &ae) && ae.ErrorCode() == "InvalidRange":
				return nil, "", fmt.Errorf("the object ends before byte %d: %w (%v)", off, io.ErrUnexpectedEOF, err)
			}
			return nil, "", b.explain(err)
		}
		return out.Body, aws.ToString(out.ETag), nil
	}
	if err := r.start(); err != nil {
		return nil, err
	}
	return r, nil
}
