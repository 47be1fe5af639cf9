package fetcher_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
)

// robotsHost is a loopback host whose robots.txt answers status with body, and whose other
// paths are the test page.
func robotsHost(t *testing.T, status int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(status)
			io.WriteString(w, body)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// parseMessages takes the parse messages sent, decoded, with their encoded sizes.
func (e *env) parseMessages() ([]*message.Parse, []int) {
	e.t.Helper()
	var out []*message.Parse
	var sizes []int
	for _, m := range e.received(parseQ) {
		pm, err := message.DecodeParse(m.Body)
		if err != nil {
			e.t.Fatal(err)
		}
		out, sizes = append(out, pm), append(sizes, len(m.Body))
	}
	return out, sizes
}

// TestTheParseMessageCarriesTheRobotsTxtTheFetcherApplied: a page's parse message carries its
// host's robots.txt as the host served it, matched for the crawler's product token; a robots.txt
// that allows all (404) travels not at all.
func TestTheParseMessageCarriesTheRobotsTxtTheFetcherApplied(t *testing.T) {
	e := newEnv(t, nil)
	if got := e.handle(e.record("m1", "/about", 1)); len(got) != 0 {
		t.Fatalf("failures %v", got)
	}
	msgs, _ := e.parseMessages()
	if len(msgs) != 1 {
		t.Fatalf("%d parse messages, want 1", len(msgs))
	}
	want := []message.RobotsRules{{Hosts: []string{"http://" + e.site.srv.Listener.Addr().String()}, Agent: "crawlstack-test",
		Body: "User-agent: *\nDisallow: /private/\n"}} // what newSite serves
	if got := msgs[0].Robots; !reflect.DeepEqual(got, want) {
		t.Errorf("robots = %+v, want %+v", got, want)
	}

	none := robotsHost(t, http.StatusNotFound, "User-agent: *\nDisallow: /\n")
	if got := e.handle(e.seedRecord("m2", none.URL+"/")); len(got) != 0 {
		t.Fatalf("failures %v", got)
	}
	msgs, _ = e.parseMessages()
	if len(msgs) != 1 || len(msgs[0].Pages)+btoi(msgs[0].URL != "") != 1 {
		t.Fatalf("parse messages %+v, want one of one page", msgs)
	}
	if len(msgs[0].Robots) != 0 {
		t.Errorf("robots = %+v for a host whose robots.txt is missing (allow all), want none", msgs[0].Robots)
	}
}

// TestAHostileRobotsTxtDoesNotBlowTheParseMessage: a robots.txt longer than a message carries
// (here 400 KB, its rule at the end) travels not at all; the rules of many hosts take at most
// message.MaxRobotsBytes a message, the pages going in as many parse messages as their hosts'
// rules need (here six files of 15 KB: two messages), so that every other host's rules travel;
// hosts that serve the same file share one entry in a message.
func TestAHostileRobotsTxtDoesNotBlowTheParseMessage(t *testing.T) {
	e := newEnv(t, nil)
	huge := robotsHost(t, http.StatusOK, strings.Repeat("# "+strings.Repeat("x", 97)+"\n", 4000)+"User-agent: *\nDisallow: /private\n")
	recs := []string{huge.URL + "/"}
	for i := range 6 { // six files of 15 KB, each its own: 90 KB, over what one message carries
		big := robotsHost(t, http.StatusOK, "User-agent: *\nDisallow: /private"+itoa(i)+"\n"+strings.Repeat("# "+strings.Repeat("y", 97)+"\n", 150))
		recs = append(recs, big.URL+"/")
	}
	var shared []string // three hosts of one small file: one entry for the three
	for range 3 {
		srv := robotsHost(t, http.StatusOK, "User-agent: *\nDisallow: /search\n")
		recs, shared = append(recs, srv.URL+"/"), append(shared, "http://"+srv.Listener.Addr().String())
	}
	var batch []events.SQSMessage
	for i, raw := range recs {
		batch = append(batch, e.seedRecord("h"+itoa(i), raw))
	}
	if got := e.handle(batch...); len(got) != 0 {
		t.Fatalf("failures %v", got)
	}
	msgs, sizes := e.parseMessages()
	pages, carried := 0, 0
	for i, m := range msgs {
		_, list := m.PageList()
		pages += len(list)
		rulesBytes := 0
		for _, r := range m.Robots {
			if slices.Contains(r.Hosts, "http://"+huge.Listener.Addr().String()) {
				t.Errorf("the 400 KB robots.txt travels in the parse message")
			}
			b, _ := json.Marshal(r)
			rulesBytes += len(b)
		}
		for _, r := range m.Robots {
			carried += len(r.Hosts)
		}
		if rulesBytes > message.MaxRobotsBytes {
			t.Errorf("message %d carries %d bytes of robots.txt, over %d", i, rulesBytes, message.MaxRobotsBytes)
		}
		if sizes[i] > message.MaxBytes {
			t.Errorf("message %d is %d bytes, over the %d a message may take", i, sizes[i], message.MaxBytes)
		}
	}
	if pages != len(recs) {
		t.Fatalf("%d pages sent to parse, want %d", pages, len(recs))
	}
	if carried != len(recs)-1 {
		t.Errorf("%d hosts' rules carried, want the %d of every host but the one of 400 KB", carried, len(recs)-1)
	}
	var sharing []string
	for _, m := range msgs {
		for _, r := range m.Robots {
			if r.Body == "User-agent: *\nDisallow: /search\n" {
				sharing = append(sharing, r.Hosts...)
			}
		}
	}
	if len(msgs) == 1 {
		t.Errorf("one parse message for %d pages: their hosts' rules could not all travel in it", pages)
	}
	for _, m := range msgs {
		bodies := map[string]bool{}
		for _, r := range m.Robots {
			if bodies[r.Body] {
				t.Errorf("a parse message names one robots.txt in two entries: %v", r.Hosts)
			}
			bodies[r.Body] = true
		}
	}
	slices.Sort(shared)
	if !sameHosts(strings.Join(sharing, " "), shared) {
		t.Errorf("the small file's hosts: %q, want %v, each once", sharing, shared)
	}
}

// sameHosts says whether the hosts joined by spaces are hosts, in any order.
func sameHosts(joined string, hosts []string) bool {
	got := strings.Fields(joined)
	slices.Sort(got)
	return slices.Equal(got, hosts)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
