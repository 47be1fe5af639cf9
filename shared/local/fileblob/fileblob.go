// Package fileblob is the embedded adapter for the blob port: one file per object under a root
// directory in the local state directory.
//
// Writes are atomic: the body goes to a temporary file in the target directory, is synced, and is
// renamed into place (Put) or hard-linked into place (PutIfAbsent, which fails if the name exists),
// so a reader sees the old object or the new one, never a part. Writes are durable: the directory
// is synced after the rename or link (and a new directory's parent after the mkdir), as a rename is
// durable only once its directory is, so an object survives a power loss once Put returns. One
// sync of a directory serves every object moved into it before the sync began (dirSyncs).
// PutDeferred is Put with the syncs left for later: its object is whole at once and survives a
// killed process, and it survives a power loss once the caller asks (fetch records a batch's pages
// while their WARC file syncs).
//
// Keys map to paths safely and readably: '/' separates directories, awkward characters are
// %-escaped, and keys that are absolute or contain "." or ".." segments are rejected. Unlike S3,
// one key cannot be both an object and a prefix of other keys ("a" and "a/b"): such a write fails
// with a clear error.
package fileblob

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/crawlstack/crawlstack/shared/port/blob"
)

var (
	_ blob.Store   = (*Store)(nil)
	_ blob.Admin   = (*Store)(nil)
	_ blob.Deleter = (*Store)(nil)
)

// Store is a blob store on files under one root directory. It is safe for concurrent use, also
// by several processes.
type Store struct {
	root  string
	syncs dirSyncs
}

// New returns a store rooted at root, creating the directory if needed.
func New(root string) (*Store, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("blob root %s: %w", root, err)
	}
	return &Store{root: root}, nil
}

// CreateBucket does nothing: the store is one bucket, its root.
func (s *Store) CreateBucket(context.Context, string) error { return nil }

func (s *Store) path(key string) (string, error) {
	rel, err := keyPath(key)
	if err != nil {
		return "", err
	}
	return filepath.Join(s.root, rel), nil
}

// Put writes (or replaces) the object. The content type is not stored.
func (s *Store) Put(ctx context.Context, key string, body []byte, contentType string) error {
	if err := s.write(ctx, key, body, false); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// PutIfAbsent writes the object only if no object has the key; otherwise it returns
// blob.ErrExists.
func (s *Store) PutIfAbsent(ctx context.Context, key string, body []byte, contentType string) error {
	if err := s.write(ctx, key, body, true); err != nil {
		return fmt.Errorf("put %s if absent: %w", key, err)
	}
	return nil
}

// PutDeferred writes (or replaces) the object like Put, but returns before the object is durable.
// Readers see the whole object at once, and it survives a killed process; until durable returns, a
// power loss may leave it missing, short or zero-filled under its name. durable syncs the object
// and its directory, so that it survives a power loss too. Call it once (it releases the file),
// while doing other work: that is the point of deferring it. The content type is not stored.
func (s *Store) PutDeferred(ctx context.Context, key string, body []byte, contentType string) (durable func() error, err error) {
	f, final, err := s.writeTemp(ctx, key, body)
	if err == nil {
		if err = os.Rename(f.Name(), final); err != nil {
			f.Close()
			os.Remove(f.Name())
			err = placeErr(key, final, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("put %s: %w", key, err)
	}
	ticket := s.syncs.moved()
	return func() error {
		err := f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = s.syncs.sync(filepath.Dir(final), ticket)
		}
		if err != nil {
			return fmt.Errorf("sync %s: %w", key, err)
		}
		return nil
	}, nil
}

// write stores body in a synced temporary file next to the object and moves it into position:
// renamed over any old object, or, if absent, hard-linked to the new name, which
// fails with blob.ErrExists when the name is taken.
func (s *Store) write(ctx context.Context, key string, body []byte, absent bool) error {
	f, final, err := s.writeTemp(ctx, key, body)
	if err != nil {
		return err
	}
	tmp := f.Name()
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
	case absent:
		if err = os.Link(tmp, final); errors.Is(err, fs.ErrExist) {
			err = blob.ErrExists
		} else if err == nil {
			err = s.syncs.sync(filepath.Dir(final), s.syncs.moved())
		}
	default:
		if err = os.Rename(tmp, final); err == nil {
			return s.syncs.sync(filepath.Dir(final), s.syncs.moved()) // the temporary name is gone
		}
	}
	os.Remove(tmp) // after a failure, or the spare name of a link
	return placeErr(key, final, err)
}

// writeTemp writes body to a new temporary file in the directory of key's object, and returns the
// open file and the object's path. It neither syncs nor closes the file.
func (s *Store) writeTemp(ctx context.Context, key string, body []byte) (*os.File, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	final, err := s.path(key)
	if err != nil {
		return nil, "", err
	}
	f, err := createTemp(filepath.Dir(final))
	if err != nil {
		return nil, "", collision(key, err)
	}
	if _, err := f.Write(body); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, "", err
	}
	return f, final, nil
}

// placeErr explains a failure to move an object into place at path final: a directory there means
// the key is also a prefix of other keys.
func placeErr(key, final string, err error) error {
	if err != nil {
		if st, serr := os.Stat(final); serr == nil && st.IsDir() {
			err = fmt.Errorf("%w: %w", syscall.EISDIR, err)
		}
	}
	return collision(key, err)
}

// createTemp creates a new temporary file in dir (mode 0644 less the umask), creating dir only
// when it is missing: most writes go to a directory that exists, and a stat each would cost.
func createTemp(dir string) (*os.File, error) {
	open := func() (*os.File, error) {
		return os.OpenFile(filepath.Join(dir, tmpPrefix+strings.ToLower(rand.Text())), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	f, err := open()
	if errors.Is(err, fs.ErrNotExist) {
		if err := mkdirAll(dir); err != nil {
			return nil, err
		}
		f, err = open()
	}
	return f, err
}

// mkdirAll is os.MkdirAll that also syncs the parent of every directory it creates, so that the
// new directories survive a power loss with the objects written into them.
func mkdirAll(dir string) error {
	var missing []string // dir and its missing ancestors, deepest first
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil || !errors.Is(err, fs.ErrNotExist) || filepath.Dir(d) == d {
			break
		}
		missing = append(missing, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := syncDir(filepath.Dir(missing[i])); err != nil {
			return err
		}
	}
	return nil
}

// syncDir makes the entries of dir durable. A variable, so that tests can watch the syncs.
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// collision explains the one S3 key layout the file store cannot hold: an object whose key is
// also a prefix of other keys ("a" and "a/b").
func collision(key string, err error) error {
	if errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) {
		return fmt.Errorf("%w %q: it is both an object and a prefix of other keys, which the embedded store cannot hold: %v",
			errBadKey, key, err)
	}
	return err
}

// Get returns the whole object, or blob.ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	p, err := s.path(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, notFound(err))
	}
	return b, nil
}

// GetRange returns length bytes from offset (fewer at the end of the object), blob.ErrNotFound, or
// blob.ErrInvalidRange when offset is at or beyond the end.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	b, err := s.getRange(ctx, key, offset, length)
	if err != nil {
		return nil, fmt.Errorf("get %s range %d+%d: %w", key, offset, length, err)
	}
	return b, nil
}

func (s *Store) getRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if offset < 0 || length < 1 {
		return nil, errors.New("the offset must be >= 0 and the length >= 1")
	}
	p, err := s.path(key)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, notFound(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if offset >= st.Size() {
		return nil, fmt.Errorf("%w: the object has %d bytes", blob.ErrInvalidRange, st.Size())
	}
	buf := make([]byte, min(length, st.Size()-offset))
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:n], nil
}

func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return blob.ErrNotFound
	}
	return err
}

// Delete removes the object's file, and syncs its directory so that the removal is durable; a
// missing object is no error, as in S3. Emptied directories are left: List skips them.
func (s *Store) Delete(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = os.Remove(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	if err == nil {
		err = syncDir(filepath.Dir(p))
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// List returns the keys that start with prefix, in lexical (byte) order.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	start := filepath.Join(s.root, dirPath(prefix))
	var keys []string
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // nothing under the prefix, or removed while walking
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(s.root, p)
		if err != nil {
			return err
		}
		if key, ok := keyFromPath(rel); ok && strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %q: %w", prefix, err)
	}
	sort.Strings(keys)
	return keys, nil
}
