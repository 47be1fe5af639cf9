// Package blob is the port for the crawler's object store: S3 on AWS, files under the state
// directory when embedded. Keys are S3-style paths ("seeds/a.txt", "pages/...warc.gz").
// Both adapters pass the conformance suite in blobtest. All methods are safe for concurrent use.
package blob

import (
	"context"
	"errors"
)

// ErrNotFound is returned when no object has the key.
var ErrNotFound = errors.New("object not found")

// ErrExists is returned by PutIfAbsent when an object already has the key.
var ErrExists = errors.New("object already exists")

// ErrInvalidRange is returned by GetRange when the range starts at or beyond the object's end
// (S3's 416 InvalidRange).
var ErrInvalidRange = errors.New("the range starts beyond the object's end")

// Store is the object store.
type Store interface {
	// Put writes (or replaces) the object.
	Put(ctx context.Context, key string, body []byte, contentType string) error
	// PutIfAbsent writes the object only if no object has the key (S3's If-None-Match: *);
	// otherwise it returns ErrExists.
	PutIfAbsent(ctx context.Context, key string, body []byte, contentType string) error
	// Get returns the whole object, or ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// GetRange returns length bytes from offset (fewer at the object's end), ErrNotFound, or
	// ErrInvalidRange when offset is at or beyond the end.
	GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error)
	// List returns the keys that start with prefix, in lexical order.
	List(ctx context.Context, prefix string) ([]string, error)
}

// Deleter deletes objects: an erasure (crawl purge, docs/erasure.md) removes stored pages and
// records. The handlers never delete, so it is not part of Store.
type Deleter interface {
	// Delete removes the object. Deleting a missing object is not an error, as in S3.
	Delete(ctx context.Context, key string) error
}

// Admin creates buckets. The local runner and the tests use it; on AWS the CDK stack does.
type Admin interface {
	CreateBucket(ctx context.Context, name string) error
}
