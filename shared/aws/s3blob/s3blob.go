// Package s3blob is the blob port on Amazon S3: one bucket, object keys as given. Bodies are sent
// from memory through a seekable reader, because over plain http (LocalStack, the emulators) the
// SDK refuses a stream it cannot rewind to sign.
package s3blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/cenkalti/backoff/v4"

	"github.com/crawlstack/crawlstack/shared/port/blob"
)

// API is the part of the S3 client this package calls; *s3.Client implements it.
type API interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, optFns ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, optFns ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
	CreateBucket(ctx context.Context, in *s3.CreateBucketInput, optFns ...func(*s3.Options)) (*s3.CreateBucketOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, optFns ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
}

var (
	_ blob.Store   = (*Store)(nil)
	_ blob.Admin   = (*Store)(nil)
	_ blob.Deleter = (*Store)(nil)
	_ API          = (*s3.Client)(nil)
)

// Store implements the blob port on one S3 bucket. It is safe for concurrent use.
type Store struct {
	api    API
	bucket string
	// conflictRetries bounds the re-tries of a conditional PUT that S3 answered with 409
	// ConditionalRequestConflict (another conditional write to the key was in flight).
	conflictRetries uint64
}

// New returns a Store for bucket, calling c (normally an *s3.Client built once per container with
// awsconfig.S3Options, so that overridden endpoints use path-style addressing).
func New(c API, bucket string) *Store {
	return &Store{api: c, bucket: bucket, conflictRetries: 5}
}

// Put writes or replaces the object.
func (s *Store) Put(ctx context.Context, key string, body []byte, contentType string) error {
	if _, err := s.api.PutObject(ctx, s.putInput(key, body, contentType)); err != nil {
		return fmt.Errorf("put s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// PutIfAbsent writes the object only if the key is free (If-None-Match: *), and returns
// blob.ErrExists when S3 answers 412 Precondition Failed. A 409 ConditionalRequestConflict, which
// S3 returns while another conditional write to the key is in flight, is retried with backoff as
// AWS advises; the retry then sees the winner's object and gets its 412.
func (s *Store) PutIfAbsent(ctx context.Context, key string, body []byte, contentType string) error {
	attempt := func() error {
		in := s.putInput(key, body, contentType)
		in.IfNoneMatch = aws.String("*")
		_, err := s.api.PutObject(ctx, in)
		switch {
		case err == nil:
			return nil
		case isCode(err, "PreconditionFailed") || httpStatus(err) == http.StatusPreconditionFailed:
			return backoff.Permanent(blob.ErrExists)
		case isCode(err, "ConditionalRequestConflict") || httpStatus(err) == http.StatusConflict:
			return err
		}
		return backoff.Permanent(err)
	}
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 50 * time.Millisecond
	b.MaxInterval = time.Second
	policy := backoff.WithContext(backoff.WithMaxRetries(b, s.conflictRetries), ctx)
	if err := backoff.Retry(attempt, policy); err != nil {
		return fmt.Errorf("put if absent s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

func (s *Store) putInput(key string, body []byte, contentType string) *s3.PutObjectInput {
	in := &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))),
	}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	return in
}

// Get returns the whole object, or blob.ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := s.get(ctx, key, nil)
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s: %w", s.bucket, key, err)
	}
	return b, nil
}

// GetRange returns up to length bytes from offset (fewer at the object's end), or
// blob.ErrNotFound. The offset must be inside the object and the length at least 1, as for an
// S3 Range request.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if offset < 0 || length < 1 {
		return nil, fmt.Errorf("get s3://%s/%s range %d+%d: the offset must be >= 0 and the length >= 1",
			s.bucket, key, offset, length)
	}
	rng := fmt.Sprintf("bytes=%d-%d", offset, offset+length-1)
	b, err := s.get(ctx, key, aws.String(rng))
	if err != nil {
		return nil, fmt.Errorf("get s3://%s/%s %s: %w", s.bucket, key, rng, err)
	}
	return b, nil
}

func (s *Store) get(ctx context.Context, key string, rng *string) ([]byte, error) {
	out, err := s.api.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), Range: rng})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) || httpStatus(err) == http.StatusNotFound && !isCode(err, "NoSuchBucket") {
			return nil, blob.ErrNotFound
		}
		if httpStatus(err) == http.StatusRequestedRangeNotSatisfiable {
			return nil, fmt.Errorf("%w: %w", blob.ErrInvalidRange, err)
		}
		return nil, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("read body: %w", err)
	}
	return b, nil
}

// List returns the keys that start with prefix, in S3's order (lexical by UTF-8 bytes), following
// every page.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket)}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	var keys []string
	pages := s3.NewListObjectsV2Paginator(s.api, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list s3://%s/%s: %w", s.bucket, prefix, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys, nil
}

// Delete removes the object; a missing object is no error (S3 answers a delete of one with 204).
func (s *Store) Delete(ctx context.Context, key string) error {
	if _, err := s.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)}); err != nil {
		return fmt.Errorf("delete s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// CreateBucket creates the named bucket; a bucket that this account already owns is fine. The
// bucket is created in the client's region (us-east-1 takes no location constraint).
func (s *Store) CreateBucket(ctx context.Context, name string) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	if o, ok := s.api.(interface{ Options() s3.Options }); ok {
		if r := o.Options().Region; r != "" && r != "us-east-1" {
			in.CreateBucketConfiguration = &types.CreateBucketConfiguration{
				LocationConstraint: types.BucketLocationConstraint(r),
			}
		}
	}
	_, err := s.api.CreateBucket(ctx, in)
	var owned *types.BucketAlreadyOwnedByYou
	if err != nil && !errors.As(err, &owned) {
		return fmt.Errorf("create bucket %s: %w", name, err)
	}
	return nil
}

func isCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}
