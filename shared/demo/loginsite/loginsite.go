// Package loginsite is a loopback site behind a login wall and a consent cookie, for the tests
// and demos of sessions and logins (docs/spec.md, "Sessions and logins"): its front page sets a
// consent cookie and links its pages; POST /login with the right user and password opens a
// session (a cookie) and redirects to /account, a wrong one shows the form again; a page asked
// without the consent cookie or a live session redirects to /login. A session is dropped after
// PerSession pages, as a site expiring its sessions does.
package loginsite

import (
	"crypto/rand"
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// LoginForm is the text of the login form: a spec's expired_body.
const LoginForm = "Please log in"

// Site is the site's handler and what it saw.
type Site struct {
	User, Password string
	// Pages are the pages behind the wall, /p/0 to /p/Pages-1; PerSession the pages a session
	// serves before the site drops it.
	Pages, PerSession int
	// Consent is the consent cookie's value.
	Consent string

	mu       sync.Mutex
	sessions map[string]int
	logins   int
	served   map[string]int
	ids      []string
}

// New returns a site of pages pages behind a login of user and password.
func New(user, password string, pages, perSession int) *Site {
	return &Site{User: user, Password: password, Pages: pages, PerSession: perSession, Consent: "consent-" + rand.Text()[:10],
		sessions: map[string]int{}, served: map[string]int{}}
}

// Logins counts the logins the site was sent.
func (s *Site) Logins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins
}

// Served is how many times each page behind the wall was served, by path.
func (s *Site) Served() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.served))
	for k, v := range s.served {
		out[k] = v
	}
	return out
}

// Secrets are the values no stored file may hold: the password, the consent cookie and every
// session id the site gave.
func (s *Site) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{s.Password, s.Consent}, s.ids...)
}

func (s *Site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.URL.Path == "/robots.txt":
		http.NotFound(w, r)
	case r.URL.Path == "/":
		http.SetCookie(w, &http.Cookie{Name: "consent", Value: s.Consent, Path: "/"})
		var b strings.Builder
		b.WriteString("<html><body><h1>Members</h1><ul>")
		for i := range s.Pages {
			fmt.Fprintf(&b, `<li class="member"><a href="/p/%d">member %d</a></li>`, i, i)
		}
		b.WriteString("</ul></body></html>")
		fmt.Fprint(w, b.String())
	case r.URL.Path == "/login" && r.Method == http.MethodPost:
		s.logins++
		_ = r.ParseForm()
		if r.PostForm.Get("user") != s.User || r.PostForm.Get("password") != s.Password {
			fmt.Fprint(w, "<html><body>"+LoginForm+`<form method="post" action="/login"></form></body></html>`)
			return
		}
		id := rand.Text()
		s.sessions[id], s.ids = 0, append(s.ids, id)
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: id, Path: "/", HttpOnly: true})
		http.Redirect(w, r, "/account", http.StatusFound)
	case r.URL.Path == "/login":
		fmt.Fprint(w, "<html><body>"+LoginForm+`<form method="post" action="/login"></form></body></html>`)
	default:
		s.page(w, r)
	}
}

// page serves a page behind the wall to a request with the consent cookie and a live session.
func (s *Site) page(w http.ResponseWriter, r *http.Request) {
	consent, err := r.Cookie("consent")
	if r.URL.Path != "/account" && (err != nil || consent.Value != s.Consent) {
		http.Redirect(w, r, "/login", http.StatusFound)
		return
	}
	c, err := r.Cookie("sid")
	n, live := 0, false
	if err == nil {
		n, live = s.sessions[c.Value]
	}
	if !live || n >= s.PerSession {
		if live {
			delete(s.sessions, c.Value) // expired: the site forgets it
		}
		http.Redirect(w, r, "/login", http.StatusFound)
		return
	}
	if r.URL.Path == "/account" { // where a login lands: counts for nothing
		fmt.Fprint(w, "<html><body>your account</body></html>")
		return
	}
	s.sessions[c.Value] = n + 1
	s.served[r.URL.Path]++
	fmt.Fprintf(w, `<html><body><h1>member page %s</h1><p class="secret">for members only</p></body></html>`, r.URL.Path)
}
