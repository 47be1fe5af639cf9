package render

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/chromedp/chromedp"
)

// EnvChromium names the browser binary when Options.Path is empty (CRAWL_CHROMIUM=/usr/bin/chromium).
const EnvChromium = "CRAWL_CHROMIUM"

// browserNames are looked up on PATH, in this order, when neither Options.Path nor
// $CRAWL_CHROMIUM names the binary.
var browserNames = []string{"chromium", "chromium-browser", "google-chrome"}

// installHint ends the ErrNoBrowser error: what to do about it.
const installHint = "install Debian's package (apt-get install -y --no-install-recommends chromium, or make chromium-deps) " +
	"or name the binary with the --chromium flag or " + EnvChromium

// Options configure a Chromium.
type Options struct {
	// Path is the browser binary. Empty: $CRAWL_CHROMIUM, then chromium, chromium-browser and
	// google-chrome on PATH.
	Path string
	// Log receives the browser's own output (stderr). Nil: discarded.
	Log io.Writer
}

// Chromium renders pages in one headless Chromium process, a new tab in a fresh browser context
// (no cookies, storage, cache or service workers shared with another render) for each Render.
// It is safe for concurrent use. The browser opens no connection of its own: every request of a
// page is intercepted (see Render), and its proxy is a loopback listener that refuses whatever
// would escape the interception (WebSockets, say), so it never reaches the network.
type Chromium struct {
	path    string
	dataDir string
	sink    *sink

	allocCancel   context.CancelFunc
	browser       context.Context // the chromedp context that owns the browser process
	browserCancel context.CancelFunc

	closeOnce sync.Once
	closeErr  error
}

// FindBrowser returns the browser binary NewChromium would start: path when set, else
// $CRAWL_CHROMIUM, else the first of chromium, chromium-browser, google-chrome on PATH. Its
// error wraps ErrNoBrowser and says how to install one.
func FindBrowser(path string) (string, error) {
	if path = cmp.Or(path, os.Getenv(EnvChromium)); path != "" {
		found, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("%w: %s: %v: %s", ErrNoBrowser, path, err, installHint)
		}
		return found, nil
	}
	for _, name := range browserNames {
		if found, err := exec.LookPath(name); err == nil {
			return found, nil
		}
	}
	return "", fmt.Errorf("%w: none of %v on PATH: %s", ErrNoBrowser, browserNames, installHint)
}

// NewChromium starts the browser. Its error wraps ErrNoBrowser when no browser is found or it
// does not start. Close stops it and removes its profile directory.
func NewChromium(opts Options) (*Chromium, error) {
	path, err := FindBrowser(opts.Path)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "crawl-chromium-")
	if err != nil {
		return nil, fmt.Errorf("render: the browser's profile directory: %w", err)
	}
	sk, err := newSink()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("render: the browser's refusing proxy: %w", err)
	}
	c := &Chromium{path: path, dataDir: dir, sink: sk}
	var allocCtx context.Context
	allocCtx, c.allocCancel = chromedp.NewExecAllocator(context.Background(),
		allocatorOptions(path, dir, sk.addr(), cmp.Or[io.Writer](opts.Log, io.Discard))...)
	c.browser, c.browserCancel = chromedp.NewContext(allocCtx)
	if err := chromedp.Do(c.browser); err != nil { // starts the process and its first tab
		_ = c.Close()
		return nil, fmt.Errorf("%w: start %s: %v", ErrNoBrowser, path, err)
	}
	return c, nil
}

// disabledFeatures are the browser features that call Google by themselves (found by the
// refusing proxy: TestBrowserCallsNoOneAtStart), and two chromedp turns off by default.
var disabledFeatures = []string{"Translate", "BlinkGenPropertyTrees", "OptimizationHints",
	"OptimizationHintsFetching", "OptimizationGuideModelDownloading", "OptimizationTargetPrediction",
	"MediaRouter", "DialMediaRouteProvider", "AutofillServerCommunication",
	"CertificateTransparencyComponentUpdater", "NetworkTimeServiceQuerying",
	// Chromium 148 (Debian, 2026-12): the omnibox's AI-mode eligibility fetch
	// (www.google.com/async/folae) and the preconnect to the default search engine.
	"AimEnabled", "PreconnectToSearch"}

// allocatorOptions are the command-line switches the browser starts with besides chromedp's defaults
// (headless, no first run, no background networking, no sync, no extensions, no default apps),
// as docs/render.md lists them. The proxy makes whatever escapes the interception (WebSockets,
// a service worker's own fetches) meet a loopback listener that refuses it; <-loopback> sends
// loopback addresses there too; the WebRTC policy keeps UDP off the network.
func allocatorOptions(path, dataDir, proxy string, log io.Writer) []chromedp.ExecAllocatorOption {
	opts := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	return append(opts,
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dataDir),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.CombinedOutput(log),
		chromedp.Flag("disable-quic", true),
		// Shared memory in /tmp, not /dev/shm: a container's (Lambda's, Docker's) is too small for
		// a renderer process, which then crashes.
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("dns-prefetch-disable", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("disable-features", strings.Join(disabledFeatures, ",")),
		// Debian's build still calls Google at start (sign-in, component updates, GCM): their
		// addresses point at the discard port on loopback, which the proxy refuses anyway.
		chromedp.Flag("gaia-url", "http://127.0.0.1:9"),
		chromedp.Flag("component-updater", "url-source=http://127.0.0.1:9/"),
		chromedp.Flag("gcm-checkin-url", "http://127.0.0.1:9/"), // GCM's device check-in (android.clients.google.com)
		chromedp.Flag("gcm-registration-url", "http://127.0.0.1:9/"),
		chromedp.Flag("proxy-server", "http://"+proxy),
		chromedp.Flag("proxy-bypass-list", "<-loopback>"),
		chromedp.Flag("force-webrtc-ip-handling-policy", "disable_non_proxied_udp"),
	)
}

// Path is the browser binary that runs.
func (c *Chromium) Path() string { return c.path }

// Escapes lists the requests that reached the browser's refusing proxy instead of the
// interception (their first line, "CONNECT host:port HTTP/1.1" or "GET ws://..."), oldest first.
// Each was refused; a healthy render adds none but the ones a page tried outside HTTP (a
// WebSocket, say).
func (c *Chromium) Escapes() []string { return c.sink.seen() }

// Close stops the browser, waits for its process to end and removes its profile directory. It
// is safe to call more than once.
func (c *Chromium) Close() error {
	c.closeOnce.Do(func() {
		if c.browserCancel != nil {
			c.browserCancel()
		}
		if c.allocCancel != nil {
			c.allocCancel()
		}
		var errs []error
		if err := c.sink.close(); err != nil {
			errs = append(errs, fmt.Errorf("render: close the refusing proxy: %w", err))
		}
		if err := os.RemoveAll(c.dataDir); err != nil {
			errs = append(errs, fmt.Errorf("render: remove the profile %s: %w", filepath.Base(c.dataDir), err))
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
