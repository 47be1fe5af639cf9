package stacke2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/finish"
)

// No EventBridge emulator runs on these machines, so the functions' EventBridge endpoint
// (AWS_ENDPOINT_URL_EVENTBRIDGE) is a stand-in server of the test's that keeps every PutEvents
// entry; the calls are recorded and held against the template's policy like the others (TestIAM).

// The drain checks of the deployed functions, shortened for a test crawl of seconds: a check every
// 250 ms, the counters quiet for 4 s (the runner takes a failed batch back within a second).
const (
	testFinishEvery = "250ms"
	testFinishQuiet = "4s"
)

// eventBus is the stand-in EventBridge endpoint.
type eventBus struct {
	mu      sync.Mutex
	entries []busEntry
}

// busEntry is one PutEvents entry as the functions sent it.
type busEntry struct {
	EventBusName, Source, DetailType, Detail string
}

func newEventBus(t *testing.T) (*eventBus, string) {
	b := &eventBus{}
	srv := httptest.NewServer(b)
	t.Cleanup(srv.Close)
	return b, srv.URL
}

func (b *eventBus) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct{ Entries []busEntry }
	body, _ := io.ReadAll(r.Body)
	if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" || json.Unmarshal(body, &in) != nil || len(in.Entries) == 0 {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"ValidationException","message":"not a PutEvents request"}`)
		return
	}
	b.mu.Lock()
	b.entries = append(b.entries, in.Entries...)
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	out := `{"FailedEntryCount":0,"Entries":[`
	for i := range in.Entries {
		if i > 0 {
			out += ","
		}
		out += `{"EventId":"` + time.Now().Format("150405.000000000") + `"}`
	}
	io.WriteString(w, out+"]}")
}

// ends returns the crawl ends put, by crawl, failing the test on any entry that is not one.
func (b *eventBus) ends(t *testing.T) map[string][]finish.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string][]finish.Event{}
	for _, en := range b.entries {
		var e finish.Event
		if en.EventBusName != "default" || en.Source != finish.Source || en.DetailType != finish.DetailType ||
			json.Unmarshal([]byte(en.Detail), &e) != nil {
			t.Errorf("an event put that is not a crawl's end on the default bus: %+v", en)
			continue
		}
		out[e.Crawl] = append(out[e.Crawl], e)
	}
	return out
}
