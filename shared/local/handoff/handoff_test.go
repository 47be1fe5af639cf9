package handoff

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/message"
	"github.com/crawlstack/crawlstack/shared/crawl/warcfile"
)

func page(url string, bodyBytes int) warcfile.Page {
	return warcfile.Page{URL: url, Status: 200, Header: http.Header{"Content-Type": {"text/html"}},
		Body: bytes.Repeat([]byte("x"), bodyBytes)}
}

func ref(i int) message.Ref {
	return message.Ref{Key: "pages/c/f.warc.gz", Offset: int64(i) * 100, Length: 100}
}

func TestTakeReturnsTheOfferedPageOnce(t *testing.T) {
	h := New(0, 0)
	p := page("http://a.test/", 10)
	if !h.Offer(ref(1), p) {
		t.Fatal("an empty handoff refused a page")
	}
	if h.Offer(ref(1), page("http://a.test/other", 10)) {
		t.Error("a second page at the same location was taken in")
	}
	if _, ok := h.Take(ref(2)); ok {
		t.Error("Take found a page at a location never offered")
	}
	got, ok := h.Take(ref(1))
	if !ok || got.URL != p.URL || !bytes.Equal(got.Body, p.Body) {
		t.Fatalf("Take = %v %v, want the offered page", got.URL, ok)
	}
	if _, ok := h.Take(ref(1)); ok {
		t.Error("a page was taken twice")
	}
	if n, b := h.Len(); n != 0 || b != 0 {
		t.Errorf("Len after the take = %d pages, %d bytes; want 0, 0", n, b)
	}
}

func TestAFullHandoffRefusesNewPagesAndKeepsOldOnes(t *testing.T) {
	one := pageSize(page("http://a.test/0", 1000))
	h := New(3*one, time.Hour)
	for i := range 3 {
		if !h.Offer(ref(i), page(fmt.Sprintf("http://a.test/%d", i), 1000)) {
			t.Fatalf("page %d refused below the bound", i)
		}
	}
	if h.Offer(ref(3), page("http://a.test/3", 1000)) {
		t.Fatal("a page past the bound was taken in")
	}
	if n, b := h.Len(); n != 3 || b != 3*one {
		t.Errorf("Len = %d pages, %d bytes; want 3, %d", n, b, 3*one)
	}
	if _, ok := h.Take(ref(0)); !ok {
		t.Fatal("the oldest page was dropped to make room")
	}
	if !h.Offer(ref(3), page("http://a.test/3", 1000)) {
		t.Error("a take did not free room")
	}
}

func TestPagesNoOneTakesExpire(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	one := pageSize(page("http://a.test/0", 1000))
	h := New(2*one, time.Minute)
	h.now = func() time.Time { return now }
	h.Offer(ref(0), page("http://a.test/0", 1000))
	now = now.Add(30 * time.Second)
	h.Offer(ref(1), page("http://a.test/1", 1000))
	now = now.Add(31 * time.Second) // page 0 is past its minute, page 1 is not
	if _, ok := h.Take(ref(0)); ok {
		t.Error("Take returned a page past its age")
	}
	if !h.Offer(ref(2), page("http://a.test/2", 1000)) {
		t.Error("an expired page still held its room")
	}
	if _, ok := h.Take(ref(1)); !ok {
		t.Error("a page within its age expired")
	}
	now = now.Add(2 * time.Minute)
	h.Offer(ref(3), page("http://a.test/3", 10))
	if n, _ := h.Len(); n != 1 {
		t.Errorf("Len = %d after everything else expired, want 1", n)
	}
}

func TestANilHandoffHoldsNothing(t *testing.T) {
	var h *Pages
	if h.Offer(ref(0), page("http://a.test/", 1)) {
		t.Error("a nil handoff took a page in")
	}
	if _, ok := h.Take(ref(0)); ok {
		t.Error("a nil handoff returned a page")
	}
}

// TestConcurrentOffersAndTakes runs under -race.
func TestConcurrentOffersAndTakes(t *testing.T) {
	h := New(1<<20, time.Hour)
	var wg sync.WaitGroup
	var mu sync.Mutex
	taken := 0
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				r := ref(w*1000 + i)
				if !h.Offer(r, page("http://a.test/", 100)) {
					t.Errorf("offer %v refused", r)
					return
				}
				if _, ok := h.Take(r); ok {
					mu.Lock()
					taken++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if taken != 800 {
		t.Errorf("%d of 800 pages taken back", taken)
	}
	if n, b := h.Len(); n != 0 || b != 0 {
		t.Errorf("Len = %d pages, %d bytes after every take; want 0, 0", n, b)
	}
}
