package stacke2e

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver stands in for the collector layer, which does not run under the runtime emulator:
// an OTLP/HTTP (protobuf) traces endpoint on loopback that keeps every span it is sent.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []span
	bad   []string // requests it could not read
}

// span is one received span, with its service and the ids in hex.
type span struct {
	Service, Trace, ID, Parent, Name string
	Kind                             tracepb.Span_SpanKind
	Links                            []spanRef
	Attrs                            map[string]string
}

// spanRef names a span: its trace and its id.
type spanRef struct{ Trace, ID string }

// newOTLPReceiver starts a receiver and returns it with its traces URL.
func newOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	r := &otlpReceiver{}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv.URL + "/v1/traces"
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			r.fail(w, "gzip: "+err.Error())
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var in coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &in)
	}
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
		r.fail(w, req.URL.Path+" "+req.Header.Get("Content-Type")+": "+errString(err))
		return
	}
	r.mu.Lock()
	for _, rs := range in.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := span{Service: service, Trace: hex.EncodeToString(s.GetTraceId()), ID: hex.EncodeToString(s.GetSpanId()),
					Parent: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: s.GetKind(), Attrs: map[string]string{}}
				for _, l := range s.GetLinks() {
					sp.Links = append(sp.Links, spanRef{hex.EncodeToString(l.GetTraceId()), hex.EncodeToString(l.GetSpanId())})
				}
				for _, kv := range s.GetAttributes() {
					sp.Attrs[kv.GetKey()] = kv.GetValue().GetStringValue()
				}
				r.spans = append(r.spans, sp)
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (r *otlpReceiver) fail(w http.ResponseWriter, why string) {
	r.mu.Lock()
	r.bad = append(r.bad, why)
	r.mu.Unlock()
	http.Error(w, why, http.StatusBadRequest)
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// received returns the spans so far and the requests it could not read.
func (r *otlpReceiver) received() ([]span, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]span(nil), r.spans...), append([]string(nil), r.bad...)
}
