package fileblob

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// emptyName is the name of an empty segment (the key "a/", or the middle of "a//b"), which
// escaping never produces.
const emptyName = "%%"

// tmpPrefix starts the name of a file being written; escaping never produces it either.
const tmpPrefix = "%tmp-"

// maxKeyBytes is S3's limit on a key.
const maxKeyBytes = 1024

// errBadKey is wrapped by every key validation error.
var errBadKey = errors.New("invalid blob key")

// keyPath maps key to a path relative to the root: one directory per '/'-separated segment but
// the last, characters other than [A-Za-z0-9._=-] and non-ASCII letters %-escaped. Paths read like
// the keys ("records/crawl=c1/dt=2026-11-29/x.jsonl"); the price is that one key cannot be both an object
// and a prefix of other keys ("a" and "a/b"), which S3 allows and the crawler never does.
func keyPath(key string) (string, error) {
	if err := checkKey(key); err != nil {
		return "", err
	}
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = segName(s)
	}
	return filepath.Join(segs...), nil
}

func segName(s string) string {
	if s == "" {
		return emptyName
	}
	return escape(s)
}

// dirPath maps the complete segments of a key prefix (everything up to its last '/') to the
// directory holding them, relative to the root ("" for the root).
func dirPath(prefix string) string {
	i := strings.LastIndexByte(prefix, '/')
	if i < 0 {
		return ""
	}
	segs := strings.Split(prefix[:i], "/")
	for j, s := range segs {
		segs[j] = segName(s)
	}
	return filepath.Join(segs...)
}

func checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", errBadKey)
	case len(key) > maxKeyBytes:
		return fmt.Errorf("%w: %d bytes, over %d", errBadKey, len(key), maxKeyBytes)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w %q: not UTF-8", errBadKey, key)
	case strings.HasPrefix(key, "/"):
		return fmt.Errorf("%w %q: absolute keys are not allowed", errBadKey, key)
	case strings.ContainsRune(key, 0):
		return fmt.Errorf("%w %q: contains NUL", errBadKey, key)
	}
	for _, s := range strings.Split(key, "/") {
		if s == "." || s == ".." {
			return fmt.Errorf("%w %q: a %q segment could escape the store", errBadKey, key, s)
		}
	}
	return nil
}

// keyFromPath is the inverse of keyPath; ok is false for files that are not objects.
func keyFromPath(rel string) (key string, ok bool) {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if strings.HasPrefix(parts[len(parts)-1], tmpPrefix) {
		return "", false
	}
	for i, p := range parts {
		if p == emptyName {
			parts[i] = ""
			continue
		}
		s, err := url.PathUnescape(p)
		if err != nil {
			return "", false
		}
		parts[i] = s
	}
	return strings.Join(parts, "/"), true
}

// escape %-escapes every byte of s outside [A-Za-z0-9._=-] and outside non-ASCII UTF-8, so names
// stay readable and portable. '=' is kept: the records' partitions are named key=value
// (records/crawl=c1/dt=2026-11-29/), as Athena and Hive name them.
func escape(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '=' || c >= 0x80 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
