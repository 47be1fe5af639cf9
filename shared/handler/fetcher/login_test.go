package fetcher_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
)

// loginPassword is the site's password: a secret no WARC file may hold.
const loginPassword = "hunter2-9c1f"

// loginSite is a site behind a login wall: POST /login with the right user and password sets a
// session cookie and redirects to /account; a wrong one shows the form again. A page asked without
// a live session redirects to /login. A session is dropped after perSession pages, as a site
// expiring sessions does. It counts the logins it was sent, and each page's answers.
type loginSite struct {
	srv        *httptest.Server
	perSession int
	mu         sync.Mutex
	sessions   map[string]int // live session id -> pages served in it
	logins     int
	served     map[string]int // path -> pages served (200) behind the wall
	bodies     []string       // the login requests' bodies
}

func newLoginSite(t *testing.T, perSession int) *loginSite {
	s := &loginSite{perSession: perSession, sessions: map[string]int{}, served: map[string]int{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		s.mu.Lock()
		defer s.mu.Unlock()
		switch {
		case r.URL.Path == "/robots.txt":
			http.NotFound(w, r)
		case r.URL.Path == "/login" && r.Method == http.MethodPost:
			s.logins++
			_ = r.ParseForm()
			s.bodies = append(s.bodies, r.PostForm.Encode())
			if r.PostForm.Get("user") != "alice" || r.PostForm.Get("password") != loginPassword {
				fmt.Fprint(w, `<html><body>Please log in <form method=post action=/login></form></body></html>`)
				return
			}
			id := rand.Text()
			s.sessions[id] = 0
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: id, Path: "/", HttpOnly: true})
			http.Redirect(w, r, "/account", http.StatusFound)
		case r.URL.Path == "/login":
			fmt.Fprint(w, `<html><body>Please log in <form method=post action=/login></form></body></html>`)
		default:
			c, err := r.Cookie("sid")
			n, live := 0, false
			if err == nil {
				n, live = s.sessions[c.Value]
			}
			if !live || n >= s.perSession {
				if live {
					delete(s.sessions, c.Value) // expired: the site forgets it
				}
				http.Redirect(w, r, "/login", http.StatusFound)
				return
			}
			if r.URL.Path != "/account" { // the page a login lands on counts for nothing
				s.sessions[c.Value] = n + 1
				s.served[r.URL.Path]++
			}
			fmt.Fprintf(w, "<html><body>behind the wall: %s</body></html>", r.URL.Path)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func loginSpec(site, passwordRef string) string {
	return "version: 1\nseeds: [" + site + "/]\nhosts:\n  127.0.0.1:\n    login:\n      url: " + site + "/login\n" +
		"      fields:\n        user: alice\n        password: {secret: \"" + passwordRef + "\"}\n" +
		"      expired_body: Please log in\n      max_logins: 3\n"
}

// newLoginRig is a session rig whose spec logs in with the password read from the variable
// SITE_PASSWORD, as crawl run reads an env: reference.
func newLoginRig(t *testing.T, site *loginSite, password string) *sessionRig {
	t.Helper()
	r := newSessionRigLocal(t, loginSpec(site.srv.URL, "env:SITE_PASSWORD"))
	if err := r.crawl.ReadLogins(context.Background(), secretref.Local{Getenv: func(name string) string {
		if name == "SITE_PASSWORD" {
			return password
		}
		return ""
	}}); err != nil {
		t.Fatal(err)
	}
	return r
}

// A crawl behind a login wall: the first batch logs in before the host's first page, the site
// drops the session after 3 pages, a page redirected to the login form logs in again and is asked
// once more. Every page ends fetched, each served once, with 2 logins for 6 pages; the WARC files
// hold neither the password nor a session id.
func TestALoginWallIsCrawledAcrossAnExpiredSession(t *testing.T) {
	site := newLoginSite(t, 3)
	r := newLoginRig(t, site, loginPassword)
	var pages []string
	for i := range 6 {
		pages = append(pages, fmt.Sprintf("%s/p%d", site.srv.URL, i))
	}
	r.invoke(pages[:2]...)
	r.invoke(pages[2:4]...) // a fresh invocation: the session is read from the state
	r.invoke(pages[4:]...)
	for _, p := range pages {
		if got := r.state_(p); got != crawlstate.Fetched {
			t.Errorf("%s ended %s, want fetched", p, got)
		}
	}
	site.mu.Lock()
	defer site.mu.Unlock()
	for i := range 6 {
		if n := site.served[fmt.Sprintf("/p%d", i)]; n != 1 {
			t.Errorf("/p%d was served %d times, want 1", i, n)
		}
	}
	if site.logins != 2 {
		t.Errorf("the site saw %d logins for 6 pages at 3 a session, want 2", site.logins)
	}
	all := r.stored()
	if strings.Contains(string(all), loginPassword) {
		t.Error("the stored files hold the password")
	}
	for id := range site.sessions {
		if strings.Contains(string(all), id) {
			t.Error("the stored files hold a session id")
		}
	}
}

// A wrong password: the logins the rule allows are made, and no more; every URL of the host
// ends failed with class login_failed, none lost.
func TestAWrongPasswordEndsTheHostsURLsLoginFailed(t *testing.T) {
	site := newLoginSite(t, 3)
	r := newLoginRig(t, site, "wrong")
	var pages []string
	for i := range 5 {
		pages = append(pages, fmt.Sprintf("%s/p%d", site.srv.URL, i))
	}
	r.invoke(pages[:1]...)
	r.invoke(pages[1:]...)
	for _, p := range pages {
		u, err := r.state.Get(context.Background(), crawl, keyOf(t, p))
		if err != nil {
			t.Fatal(err)
		}
		if u.State != crawlstate.Failed || u.Class != errclass.Login {
			t.Errorf("%s ended %s (%s), want failed (login_failed)", p, u.State, u.Class)
		}
	}
	site.mu.Lock()
	defer site.mu.Unlock()
	if site.logins != 3 {
		t.Errorf("the site saw %d logins, want 3 (max_logins)", site.logins)
	}
	if len(site.served) != 0 {
		t.Errorf("pages served without a session: %v", site.served)
	}
}
