// Package fakecfn serves CloudFormation's DescribeStacks on loopback, in its query protocol (a
// form POST answered in XML, as the SDK's snapshots show), for the tests of the CLI's --stack:
// there is no CloudFormation emulator among the local AWS emulators.
package fakecfn

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync/atomic"
	"testing"
)

// Server answers DescribeStacks for its stacks: their outputs by key.
type Server struct {
	URL    string
	stacks map[string]map[string]string
	calls  atomic.Int64
}

// Calls is how many requests the server answered.
func (s *Server) Calls() int64 { return s.calls.Load() }

// Start serves stacks until the test ends.
func Start(t testing.TB, stacks map[string]map[string]string) *Server {
	t.Helper()
	s := &Server{stacks: stacks}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

type output struct {
	Key   string `xml:"OutputKey"`
	Value string `xml:"OutputValue"`
}

type stack struct {
	Name    string   `xml:"StackName"`
	ID      string   `xml:"StackId"`
	Status  string   `xml:"StackStatus"`
	Created string   `xml:"CreationTime"`
	Outputs []output `xml:"Outputs>member"`
}

type describeResponse struct {
	XMLName xml.Name `xml:"DescribeStacksResponse"`
	NS      string   `xml:"xmlns,attr"`
	Stacks  []stack  `xml:"DescribeStacksResult>Stacks>member"`
	Request string   `xml:"ResponseMetadata>RequestId"`
}

type errorResponse struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	NS      string   `xml:"xmlns,attr"`
	Type    string   `xml:"Error>Type"`
	Code    string   `xml:"Error>Code"`
	Message string   `xml:"Error>Message"`
	Request string   `xml:"RequestId"`
}

const ns = "http://cloudformation.amazonaws.com/doc/2010-05-15/"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	if err := r.ParseForm(); err != nil || r.Form.Get("Action") != "DescribeStacks" {
		s.fail(w, http.StatusBadRequest, "InvalidAction", fmt.Sprintf("this fake serves DescribeStacks only, not %q", r.Form.Get("Action")))
		return
	}
	name := r.Form.Get("StackName")
	outs, ok := s.stacks[name]
	if !ok {
		s.fail(w, http.StatusBadRequest, "ValidationError", "Stack with id "+name+" does not exist")
		return
	}
	st := stack{Name: name, ID: "arn:aws:cloudformation:us-east-1:000000000000:stack/" + name + "/1",
		Status: "CREATE_COMPLETE", Created: "2026-12-01T00:00:00Z"}
	keys := make([]string, 0, len(outs))
	for k := range outs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		st.Outputs = append(st.Outputs, output{Key: k, Value: outs[k]})
	}
	w.Header().Set("Content-Type", "text/xml")
	xml.NewEncoder(w).Encode(describeResponse{NS: ns, Stacks: []stack{st}, Request: "fake"})
}

func (s *Server) fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	xml.NewEncoder(w).Encode(errorResponse{NS: ns, Type: "Sender", Code: code, Message: msg, Request: "fake"})
}
