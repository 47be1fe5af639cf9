package render

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// resourceTypes are the Chrome DevTools Protocol's resource types, lowercased: the names
// Limits.Load and SubRequest.Type use.
var resourceTypes = []string{"document", "stylesheet", "image", "media", "font", "script", "texttrack",
	"xhr", "fetch", "prefetch", "eventsource", "websocket", "manifest", "signedexchange", "ping",
	"cspviolationreport", "preflight", "fedcm", "other"}

// neverLoaded are refused whatever Limits.Load says: beacons and reports (they send, they do not
// fetch), streams that never end (an event source), and WebSockets (not HTTP requests).
var neverLoaded = []string{"ping", "cspviolationreport", "eventsource", "websocket"}

// Reasons a sub-request is refused (SubRequest.Refused); a Loader's refusal is its error's text.
const (
	RefusedType       = "blocked type"
	RefusedCap        = "over the request cap"
	RefusedBytes      = "over the byte cap"
	RefusedNavigation = "navigation to another document"
	RefusedMethod     = "method not loaded (GET and HEAD only)"
	RefusedFavicon    = "the browser's own favicon request"
)

// droppedHeaders are not handed to the browser with a body: the body is whole and decoded.
var droppedHeaders = []string{"Content-Encoding", "Content-Length", "Transfer-Encoding", "Connection", "Keep-Alive"}

// session is one render's interception: its limits, its sub-requests and their accounting.
type session struct {
	req      Request
	blocked  map[string]bool
	maxReqs  int
	maxBytes int64
	wait     sync.WaitGroup // the event loop and every handler

	mu       sync.Mutex
	mainSeen bool
	requests int   // sub-requests admitted to the Loader
	bytes    int64 // bytes of their bodies read
	inFlight int
	last     time.Time // the last sub-request's start or end
	subs     []SubRequest
}

func newSession(req Request) (*session, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	blocked := map[string]bool{}
	for _, t := range DefaultBlocked {
		blocked[t] = true
	}
	for _, t := range req.Limits.Load {
		t = strings.ToLower(strings.TrimSpace(t))
		if !slices.Contains(resourceTypes, t) {
			return nil, fmt.Errorf("render: load %q: not a resource type (want one of %s)", t, strings.Join(resourceTypes, ", "))
		}
		delete(blocked, t)
	}
	for _, t := range neverLoaded {
		blocked[t] = true
	}
	return &session{
		req: req, blocked: blocked,
		maxReqs:  cmp.Or(req.Limits.MaxRequests, DefaultMaxRequests),
		maxBytes: cmp.Or(req.Limits.MaxBytes, DefaultMaxBytes),
		last:     time.Now(),
	}, nil
}

// intercept answers each paused request of the tab in a goroutine of its own (a command sent
// from the event loop itself would wait for ever), until ctx ends.
func (s *session) intercept(ctx context.Context, t *chromedp.Target, paused iter.Seq2[fetch.EventRequestPaused, error]) {
	s.wait.Add(1)
	go func() {
		defer s.wait.Done()
		for ev, err := range paused {
			if err != nil {
				return
			}
			s.wait.Add(1)
			go func() {
				defer s.wait.Done()
				s.answer(ctx, t, ev)
			}()
		}
	}()
}

// answer fulfils, loads or refuses one paused request.
func (s *session) answer(ctx context.Context, t *chromedp.Target, ev fetch.EventRequestPaused) {
	typ := strings.ToLower(string(ev.ResourceType))
	if typ == "document" {
		s.mu.Lock()
		first := !s.mainSeen
		s.mainSeen = true
		s.mu.Unlock()
		if first {
			fulfil(ctx, t, ev.RequestID, s.req.Page.Status, s.req.Page.Header, s.req.Page.Body, true)
			return
		}
		// A 204 to a navigation leaves the document where it is; a failure would show an
		// error page in its place.
		s.record(SubRequest{URL: ev.Request.URL, Type: typ, Refused: RefusedNavigation})
		fulfil(ctx, t, ev.RequestID, http.StatusNoContent, nil, nil, false)
		return
	}
	if typ == "xhr" && headerValue(ev.Request.Headers, "Accept") == "text/event-stream" {
		typ = "eventsource" // Chromium names an EventSource's request XHR
	}
	if typ == "other" && isFavicon(ev.Request.URL) {
		s.refuse(ctx, t, ev, typ, RefusedFavicon) // the browser's, not the page's: not counted
		return
	}
	if reason := s.admit(typ, ev.Request.Method); reason != "" {
		s.refuse(ctx, t, ev, typ, reason)
		return
	}
	defer s.end()
	resp, body, reason := s.load(ctx, ev)
	if reason != "" {
		s.refuse(ctx, t, ev, typ, reason)
		return
	}
	s.record(SubRequest{URL: ev.Request.URL, Type: typ, Status: resp.StatusCode})
	fulfil(ctx, t, ev.RequestID, resp.StatusCode, resp.Header, body, false)
}

// headerValue is a request header's value, "" when absent.
func headerValue(h network.Headers, name string) string {
	for k, v := range h {
		if s, ok := v.(string); ok && strings.EqualFold(k, name) {
			return s
		}
	}
	return ""
}

// isFavicon: the browser asks every site for /favicon.ico after a page loads.
func isFavicon(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && u.Path == "/favicon.ico"
}

// admit says why a request may not go to the Loader ("" when it may), and counts it in flight
// when it may.
func (s *session) admit(typ, method string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.blocked[typ]:
		return RefusedType
	case method != http.MethodGet && method != http.MethodHead:
		return RefusedMethod
	case s.requests >= s.maxReqs:
		return RefusedCap
	}
	s.requests++
	s.inFlight++
	s.last = time.Now()
	return ""
}

func (s *session) end() {
	s.mu.Lock()
	s.inFlight--
	s.last = time.Now()
	s.mu.Unlock()
}

// load has the Loader make the request and reads its body within the page's byte budget.
func (s *session) load(ctx context.Context, ev fetch.EventRequestPaused) (*http.Response, []byte, string) {
	r, err := http.NewRequestWithContext(ctx, ev.Request.Method, ev.Request.URL, nil)
	if err != nil {
		return nil, nil, err.Error()
	}
	for k, v := range ev.Request.Headers {
		if s, ok := v.(string); ok && !strings.EqualFold(k, "User-Agent") {
			r.Header.Set(k, s)
		}
	}
	resp, err := s.req.Loader.Load(ctx, r)
	switch {
	case err != nil:
		return nil, nil, err.Error()
	case resp == nil:
		return nil, nil, "the Loader returned no response"
	case resp.Body == nil:
		resp.Body = http.NoBody
	}
	defer resp.Body.Close()
	s.mu.Lock()
	left := s.maxBytes - s.bytes
	s.mu.Unlock()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max(left, 0)+1))
	s.mu.Lock()
	s.bytes += int64(len(body))
	over := s.bytes > s.maxBytes
	s.mu.Unlock()
	switch {
	case over:
		return nil, nil, RefusedBytes
	case err != nil:
		return nil, nil, fmt.Sprintf("read the body: %v", err)
	}
	return resp, body, ""
}

func (s *session) refuse(ctx context.Context, t *chromedp.Target, ev fetch.EventRequestPaused, typ, reason string) {
	s.mu.Lock()
	s.last = time.Now()
	s.mu.Unlock()
	s.record(SubRequest{URL: ev.Request.URL, Type: typ, Refused: reason})
	_, _ = cdp.Call(ctx, t, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonBlockedByClient})
}

func (s *session) record(sr SubRequest) {
	s.mu.Lock()
	s.subs = append(s.subs, sr)
	s.mu.Unlock()
}

// quiet is how long no sub-request has been in flight (zero while one is).
func (s *session) quiet() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inFlight > 0 {
		return 0
	}
	return time.Since(s.last)
}

func (s *session) touch() {
	s.mu.Lock()
	s.last = time.Now()
	s.mu.Unlock()
}

func (s *session) done() []SubRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.subs)
}

// fulfil answers a paused request with a status, headers and a whole, decoded body. The main
// document gets text/html when it has no Content-Type.
func fulfil(ctx context.Context, t *chromedp.Target, id fetch.RequestID, status int, h http.Header, body []byte, main bool) {
	var headers []*fetch.HeaderEntry
	for name, values := range h {
		if slices.ContainsFunc(droppedHeaders, func(d string) bool { return strings.EqualFold(d, name) }) {
			continue
		}
		for _, v := range values {
			headers = append(headers, &fetch.HeaderEntry{Name: name, Value: v})
		}
	}
	if main && h.Get("Content-Type") == "" {
		headers = append(headers, &fetch.HeaderEntry{Name: "Content-Type", Value: "text/html; charset=utf-8"})
	}
	_, _ = cdp.Call(ctx, t, fetch.FulfillRequest, fetch.FulfillRequestParams{
		RequestID: id, ResponseCode: int64(cmp.Or(status, http.StatusOK)), ResponseHeaders: headers, Body: body,
	})
}
