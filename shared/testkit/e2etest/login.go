package e2etest

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlstate"
	"github.com/crawlstack/crawlstack/shared/crawl/errclass"
	"github.com/crawlstack/crawlstack/shared/crawl/secretref"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile/warctest"
	"github.com/crawlstack/crawlstack/shared/demo/loginsite"
)

// LoginSpec is a spec that crawls site's front page and its members' pages, logging in with the
// password in the file passwordFile (a file: reference, as crawl run reads it).
func LoginSpec(siteURL, passwordFile string) string {
	u, _ := url.Parse(siteURL)
	return fmt.Sprintf(`version: 1
seeds: [%s/]
max_depth: 1
hosts:
  %q:
    login:
      url: %s/login
      fields:
        user: alice
        password: {secret: "file:%s"}
      expired_body: %q
      max_logins: 5
`, siteURL, u.Host, siteURL, passwordFile, loginsite.LoginForm)
}

// CheckLoginWall crawls a site behind a login wall and a consent cookie (package loginsite) that
// drops its sessions after 4 pages, from a spec whose host logs in with a password read from a
// file: every page ends fetched, each served once behind the wall, with a login for each
// session the pages needed; warcio.js reads the crawl's WARC files, and no stored file holds the
// password, the consent cookie or a session id. Then the same crawl with a wrong password: the
// host's pages end failed with class login_failed, after at most max_logins logins, and the
// front page (which needs no session) is fetched.
func (h *Harness) CheckLoginWall(concurrency int) {
	t := h.T
	t.Helper()
	ctx := context.Background()
	const pages, perSession = 10, 4
	site := loginsite.New("alice", "pw-"+t.Name()[:4]+"-7f3e", pages, perSession)
	srv := httptest.NewServer(site)
	defer srv.Close()
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte(site.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := h.Config()
	cfg.LocalSecrets = true
	ports := h.Ports()
	ports.Secrets = secretref.Local{}
	run := func(name, spec string) string {
		crawl, err := h.Start(ctx, h.Res, name, []byte(spec))
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Run(ctx, crawl, cfg, ports, h.Queue, concurrency); err != nil {
			t.Fatal(err)
		}
		return crawl
	}
	start := time.Now()
	crawl := run("login.yaml", LoginSpec(srv.URL, pw))
	t.Logf("the crawl behind the login wall took %v", time.Since(start))
	tally, err := crawlstate.New(h.Table).Tally(ctx, crawl)
	if err != nil {
		t.Fatal(err)
	}
	if tally.Fetched != pages+1 || tally.Pending() != 0 || tally.Failed != 0 {
		t.Errorf("tally %d fetched, %d pending, %d failed: want the front page and %d pages behind the wall fetched", tally.Fetched, tally.Pending(), tally.Failed, pages)
	}
	if tally.Failed != 0 {
		for i := range pages {
			if u, err := crawlstate.New(h.Table).Get(ctx, crawl, urlKey(t, fmt.Sprintf("%s/p/%d", srv.URL, i))); err == nil && u.State != crawlstate.Fetched {
				t.Errorf("/p/%d ended %s: %s %s", i, u.State, u.Class, u.Detail)
			}
		}
	}
	served := site.Served()
	for i := range pages {
		if n := served[fmt.Sprintf("/p/%d", i)]; n != 1 {
			t.Errorf("/p/%d was served %d times behind the wall, want once", i, n)
		}
	}
	if n, least := site.Logins(), (pages+perSession-1)/perSession; n < least || n > least+concurrency {
		t.Errorf("%d logins for %d pages at %d a session, want %d (or a few more: sessions expire under pages in flight)", n, pages, perSession, least)
	}
	files := h.warcFiles(crawl)
	if got := warctest.Check(t, files...); got.Responses != pages+1 {
		t.Errorf("warcio.js read %+v: want %d responses", got, pages+1)
	}
	h.checkNoSecret(site.Secrets(), files)

	wrong := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrong, []byte("not-the-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	before := site.Logins()
	bad := run("wrong.yaml", LoginSpec(srv.URL, wrong)+"# the wrong password\n")
	// The login comes before the host's first page: the front page ends login_failed, and no
	// link of it is admitted.
	u, err := crawlstate.New(h.Table).Get(ctx, bad, urlKey(t, srv.URL+"/"))
	if err != nil || u.State != crawlstate.Failed || u.Class != errclass.Login {
		t.Errorf("the front page with a wrong password: %+v, %v; want failed (login_failed)", u, err)
	}
	if tally, err := crawlstate.New(h.Table).Tally(ctx, bad); err != nil || tally.Pending() != 0 || tally.Failed != 1 || tally.Fetched != 0 {
		t.Errorf("tally with a wrong password %+v, %v: want one failed, none pending", tally, err)
	}
	if n := site.Logins() - before; n < 1 || n > 5 {
		t.Errorf("%d logins with a wrong password, want 1 to 5 (max_logins)", n)
	}
}

// checkNoSecret fails the test if any of the files, gunzipped, holds one of the secrets.
func (h *Harness) checkNoSecret(secrets, files []string) {
	h.T.Helper()
	for _, f := range files {
		plain := gunzipAll(h.T, f)
		for _, s := range secrets {
			if bytes.Contains(plain, []byte(s)) {
				h.T.Errorf("%s holds a secret value of the site (%d bytes)", filepath.Base(f), len(s))
			}
		}
	}
}

// gunzipAll is a file's bytes, and each of its gzip members read out.
func gunzipAll(t testing.TB, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := bytes.NewBuffer(append([]byte(nil), raw...))
	if zr, err := gzip.NewReader(bytes.NewReader(raw)); err == nil {
		if _, err := io.Copy(out, zr); err != nil {
			t.Fatalf("gunzip %s: %v", filepath.Base(path), err)
		}
	}
	return out.Bytes()
}
