// Package fileblob is the embedded blob.Store: one file per object under a root directory.
//
// Keys map to paths segment by segment ("pages/a.warc.gz" is root/pages/a.warc.gz). Bytes other
// than [A-Za-z0-9._-] are percent-encoded, a leading '.' is encoded too (so names never collide with
// the store's temporary files, which start with '.'), and an empty segment is stored as "%". Any
// S3-style key therefore works, except absolute keys and keys with a ".." segment, which are
// rejected, and a key that is also a prefix of another key followed by '/' (a file cannot also be
// a directory), which fails with an error.
//
// Writes go to a temporary file that is renamed (Put) or hard-linked (PutIfAbsent) into place, so
// readers never see a partial object. Files are not fsynced: a write survives a process kill but
// not necessarily a power loss. The content type is not stored.
package fileblob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/crawlstack/crawlstack/shared/blob"
)

var _ blob.Store = (*Store)(nil)

// ErrBadKey is returned for keys that cannot name a file under the root: empty, absolute, or with
// a ".." segment.
var ErrBadKey = errors.New("invalid blob key")

// Store is a blob.Store on a directory. It is safe for concurrent use, also by several processes.
type Store struct {
	root string
}

// New returns a store rooted at dir, creating the directory if needed.
func New(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create blob root: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("blob root %s: %w", dir, err)
	}
	return &Store{root: abs}, nil
}

// Root returns the directory the store writes under.
func (s *Store) Root() string { return s.root }

// Put writes (or replaces) the object atomically.
func (s *Store) Put(ctx context.Context, key string, body []byte, contentType string) error {
	path, tmp, err := s.stage(ctx, key, body)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("put %q: %w", key, err)
	}
	return nil
}

// PutIfAbsent writes the object only if no object has the key; otherwise it returns
// blob.ErrExists. The check and the write are one atomic link(2).
func (s *Store) PutIfAbsent(ctx context.Context, key string, body []byte, contentType string) error {
	path, tmp, err := s.stage(ctx, key, body)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if fi, serr := os.Stat(path); serr == nil && fi.IsDir() {
				return fmt.Errorf("put %q: key is a prefix of other keys", key)
			}
			return fmt.Errorf("put %q: %w", key, blob.ErrExists)
		}
		return fmt.Errorf("put %q: %w", key, err)
	}
	return nil
}

// stage writes body to a temporary file next to the key's path and returns both paths.
func (s *Store) stage(ctx context.Context, key string, body []byte) (path, tmp string, err error) {
	if err := ctx.Err(); err != nil {
		return "", "", fmt.Errorf("put %q: %w", key, err)
	}
	path, err = s.path(key)
	if err != nil {
		return "", "", err
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return "", "", fmt.Errorf("put %q: key is a prefix of other keys", key)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("put %q: %w", key, err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", "", fmt.Errorf("put %q: %w", key, err)
	}
	_, werr := f.Write(body)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return "", "", fmt.Errorf("put %q: %w", key, err)
	}
	return path, f.Name(), nil
}

// Get returns the whole object, or blob.ErrNotFound.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	path, err := s.path(key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("get %q: %w", key, notFound(err))
	}
	return b, nil
}

// GetRange returns length bytes from offset; a range past the end is clipped, as S3 does.
func (s *Store) GetRange(ctx context.Context, key string, offset, length int64) ([]byte, error) {
	if offset < 0 || length < 0 {
		return nil, fmt.Errorf("get range %q: negative offset or length", key)
	}
	path, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("get range %q: %w", key, notFound(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("get range %q: %w", key, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("get range %q: %w", key, blob.ErrNotFound)
	}
	if offset >= fi.Size() && length > 0 {
		return nil, fmt.Errorf("get range %q: offset %d beyond size %d", key, offset, fi.Size())
	}
	length = min(length, fi.Size()-offset)
	buf := make([]byte, length)
	if _, err := f.ReadAt(buf, offset); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("get range %q: %w", key, err)
	}
	return buf, nil
}

// List returns the keys that start with prefix, in lexical order.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	// Walk only the deepest directory the prefix fully names.
	start := s.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		segs := strings.Split(prefix[:i], "/")
		for _, seg := range segs {
			if seg == ".." {
				return nil, nil
			}
			start = filepath.Join(start, encodeSegment(seg))
		}
	}
	var keys []string
	err := filepath.WalkDir(start, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(s.root, path)
		if err != nil {
			return err
		}
		key, err := decodePath(rel)
		if err != nil {
			return nil // not one of ours
		}
		if strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %q: %w", prefix, err)
	}
	slices.Sort(keys)
	return keys, nil
}

// notFound maps a missing file, or a directory (a key that is only a prefix), to blob.ErrNotFound.
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EISDIR) {
		return blob.ErrNotFound
	}
	return err
}

// path maps a key to a file path under the root.
func (s *Store) path(key string) (string, error) {
	if key == "" {
		return "", fmt.Errorf("%w: empty key", ErrBadKey)
	}
	if strings.HasPrefix(key, "/") {
		return "", fmt.Errorf("%w %q: absolute keys are not allowed", ErrBadKey, key)
	}
	segs := strings.Split(key, "/")
	parts := make([]string, 0, len(segs)+1)
	parts = append(parts, s.root)
	for _, seg := range segs {
		if seg == ".." {
			return "", fmt.Errorf("%w %q: \"..\" segments are not allowed", ErrBadKey, key)
		}
		parts = append(parts, encodeSegment(seg))
	}
	return filepath.Join(parts...), nil
}

const hexDigits = "0123456789ABCDEF"

// encodeSegment percent-encodes one key segment into a safe file name.
func encodeSegment(seg string) string {
	if seg == "" {
		return "%"
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if isSafe(c) && !(i == 0 && c == '.') {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

func isSafe(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
}

// decodePath turns a path relative to the root back into a key.
func decodePath(rel string) (string, error) {
	segs := strings.Split(filepath.ToSlash(rel), "/")
	for i, seg := range segs {
		d, err := decodeSegment(seg)
		if err != nil {
			return "", err
		}
		segs[i] = d
	}
	return strings.Join(segs, "/"), nil
}

func decodeSegment(seg string) (string, error) {
	if seg == "%" {
		return "", nil
	}
	var b strings.Builder
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(seg) {
			return "", fmt.Errorf("bad escape in %q", seg)
		}
		hi, lo := unhex(seg[i+1]), unhex(seg[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("bad escape in %q", seg)
		}
		b.WriteByte(byte(hi<<4 | lo))
		i += 2
	}
	return b.String(), nil
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}
