package session

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"sync"
	"time"
)

// Jar is one host's cookies while a batch fetches from it: those stored when it was read, and the
// changes the batch's answers made since, which are what is saved (merged onto whatever was stored
// meanwhile). It is an http.CookieJar for the host's requests; requests to other hosts get no
// cookies from it, and their answers' cookies are not kept. It is safe for concurrent use.
type Jar struct {
	host string
	now  func() time.Time

	mu      sync.Mutex
	match   *cookiejar.Jar
	changes []Change
}

var _ http.CookieJar = (*Jar)(nil)

// NewJar returns the jar of host holding the stored cookies (now: the clock, time.Now when nil).
func NewJar(host string, stored []Cookie, now func() time.Time) (*Jar, error) {
	if now == nil {
		now = time.Now
	}
	kept, _ := Apply(stored, nil, now())
	m, err := matcher(host, kept)
	if err != nil {
		return nil, err
	}
	return &Jar{host: host, now: now, match: m}, nil
}

// Host is the host whose cookies the jar holds.
func (j *Jar) Host() string { return j.host }

// Cookies are the cookies a request to u carries (net/http/cookiejar's choice).
func (j *Jar) Cookies(u *url.URL) []*http.Cookie {
	if u.Host != j.host {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.match.Cookies(u)
}

// SetCookies keeps the cookies an answer from u set, to send and to save.
func (j *Jar) SetCookies(u *url.URL, cookies []*http.Cookie) {
	if u.Host != j.host || len(cookies) == 0 {
		return
	}
	changes := Learn(u, cookies, j.now())
	j.mu.Lock()
	defer j.mu.Unlock()
	j.match.SetCookies(u, cookies)
	j.changes = append(j.changes, changes...)
}

// Changes are the changes the jar's answers made since it was read, in order: what saving it
// applies to the stored jar.
func (j *Jar) Changes() []Change {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Change(nil), j.changes...)
}

// Saved forgets the first n changes, saved.
func (j *Jar) Saved(n int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.changes = append([]Change(nil), j.changes[min(n, len(j.changes)):]...)
}
