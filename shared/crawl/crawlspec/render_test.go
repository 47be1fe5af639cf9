package crawlspec

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseTheRenderSection(t *testing.T) {
	body := `version: 1
seeds: [http://127.0.0.1:8080/]
render:
  patterns: ['/app/', '\?view=js']
  when_fewer_links: 3
  when_no_main: true
  wait: {network_idle: true, selector: '#results li', max: 12s}
  limits: {max_requests: 50, max_bytes: 5000000, load: [image, font]}
`
	s, err := Parse([]byte(body), Bounds{})
	if err != nil {
		t.Fatal(err)
	}
	want := &Render{Patterns: []string{"/app/", `\?view=js`}, WhenFewerLinks: 3, WhenNoMain: true,
		Wait:   RenderWait{NetworkIdle: true, Selector: "#results li", Max: 12 * time.Second},
		Limits: RenderLimits{MaxRequests: 50, MaxBytes: 5000000, Load: []string{"image", "font"}}}
	if !reflect.DeepEqual(s.Render, want) {
		t.Errorf("render %+v, want %+v", s.Render, want)
	}
	// Stored as JSON for the handlers, and read back the same.
	b, err := json.Marshal(s.Settings)
	if err != nil {
		t.Fatal(err)
	}
	var back Settings
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Render, want) {
		t.Errorf("settings read back as %+v (%v), want %+v", back.Render, err, want)
	}
	// Off unless set: a spec without the section stores none.
	s, err = Parse([]byte("version: 1\nseeds: [http://127.0.0.1/]\n"), Bounds{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Render != nil {
		t.Errorf("a spec without render: %+v", s.Render)
	}
	if b, _ := json.Marshal(s.Settings); strings.Contains(string(b), "render") {
		t.Errorf("a spec without render stores %s", b)
	}
}

func TestBadRenderSectionsSayWhereAndWhat(t *testing.T) {
	head := "version: 1\nseeds: [http://127.0.0.1/]\n"
	tests := []struct {
		name, body string
		want       []string
	}{
		{"nothing renders", "render: {wait: {max: 5s}}\n", []string{"line 3: render: no page would render"}},
		{"not a mapping", "render: yes\n", []string{"line 3: render: want a mapping"}},
		{"unknown key", "render:\n  patterns: [x]\n  whenFewerLinks: 2\n", []string{"line 5: render.whenFewerLinks: unknown setting"}},
		{"bad pattern", "render:\n  patterns: ['(']\n", []string{"line 4: render.patterns: \"(\""}},
		{"fewer links", "render:\n  when_fewer_links: 0\n", []string{"line 4: render.when_fewer_links: 0: want 1 or more"}},
		{"no main", "render:\n  when_no_main: maybe\n", []string{"line 4: render.when_no_main: want true or false"}},
		{"wait", "render:\n  patterns: [x]\n  wait:\n    selector: 'div[['\n    max: 2m\n    network_idle: 1\n",
			[]string{"line 6: render.wait.selector: \"div[[\" is not a CSS selector", "line 7: render.wait.max: \"2m\": want a duration",
				"line 8: render.wait.network_idle: want true or false"}},
		{"limits", "render:\n  patterns: [x]\n  limits:\n    max_requests: 5000\n    max_bytes: -1\n    load: [image, script]\n",
			[]string{"line 6: render.limits.max_requests: 5000: want 1 to 1000", "line 7: render.limits.max_bytes: -1: want 1 or more",
				"line 8: render.limits.load: \"script\": want one of [image media font]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(head+tt.body), Bounds{})
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error %v, want Errors", err)
			}
			if len(es) != len(tt.want) {
				t.Errorf("%d errors, want %d:\n%v", len(es), len(tt.want), err)
			}
			for i, w := range tt.want {
				if i < len(es) && !strings.HasPrefix(es[i].Error(), w) {
					t.Errorf("error %d is %q, want it to start with %q", i, es[i].Error(), w)
				}
			}
		})
	}
}
