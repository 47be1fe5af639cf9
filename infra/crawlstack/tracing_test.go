package crawlstack

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const testCollectorLayer = "arn:aws:lambda:us-east-1:901920570463:layer:aws-otel-collector-arm64-ver-0-117-0:1"

// collectorConfig is the part of an OpenTelemetry collector's configuration that the tests read.
type collectorConfig struct {
	Receivers map[string]struct {
		Protocols map[string]struct {
			Endpoint string `yaml:"endpoint"`
		} `yaml:"protocols"`
	} `yaml:"receivers"`
	Exporters map[string]map[string]any `yaml:"exporters"`
	Service   struct {
		Pipelines map[string]struct {
			Receivers []string `yaml:"receivers"`
			Exporters []string `yaml:"exporters"`
		} `yaml:"pipelines"`
	} `yaml:"service"`
}

// TestTracingTemplates holds each tracing mode's template to what tracing needs end to end, off,
// to X-Ray and to an OTLP endpoint: the layers, the collector's configuration that the functions'
// OPENTELEMETRY_COLLECTOR_CONFIG_URI names (read from the files the configuration layer ships and
// parsed as the collector parses it), the spans' endpoint at that configuration's receiver,
// active tracing and the X-Ray actions only for X-Ray, and the metrics left as EMF lines in every
// mode (no OTLP metrics endpoint, metrics not turned off).
func TestTracingTemplates(t *testing.T) {
	const user = "https://otlp.example.com:4318"
	_, xray := synthWith(t, map[string]any{"otelCollectorLayerArn": testCollectorLayer})
	_, otlp := synthWith(t, map[string]any{"otelCollectorLayerArn": testCollectorLayer, "otelTracesEndpoint": user})
	xrayActions := []string{"xray:PutTelemetryRecords *", "xray:PutTraceSegments *"}
	for _, tt := range []struct {
		name     string
		template map[string]any
		layers   int
		active   bool
		exporter string
	}{
		{"off", tmplJSON, 0, false, ""},
		{"xray", xray, 2, true, "awsxray"},
		{"otlp", otlp, 2, false, "otlphttp"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			configLayers := 0
			for _, r := range resourcesOf(tt.template) {
				if r["Type"] == "AWS::Lambda::LayerVersion" {
					configLayers++
				}
			}
			if want := min(tt.layers, 1); configLayers != want {
				t.Errorf("%d layer versions in the template, want %d (the collector's configuration)", configLayers, want)
			}
			n := 0
			for id, r := range resourcesOf(tt.template) {
				p, _ := r["Properties"].(map[string]any)
				env, _ := p["Environment"].(map[string]any)
				vars, _ := env["Variables"].(map[string]any)
				if r["Type"] != "AWS::Lambda::Function" || vars["CRAWL_TABLE"] == nil {
					continue // not one of the crawl's functions
				}
				n++
				fn := strings.TrimSuffix(hashSuffix.ReplaceAllString(id, ""), "Function")
				layers := list(p["Layers"])
				if p["Layers"] == nil {
					layers = nil
				}
				if len(layers) != tt.layers || (tt.layers > 0 && layers[0] != testCollectorLayer) {
					t.Errorf("%s: layers %s, want %d with the collector's first", fn, quoted(p["Layers"]), tt.layers)
				}
				if tt.layers > 1 && render(layers[1]) != "OTelCollectorConfig" {
					t.Errorf("%s: layers %s, want the stack's collector configuration second", fn, quoted(p["Layers"]))
				}
				mode, _ := p["TracingConfig"].(map[string]any)
				if active := mode["Mode"] == "Active"; active != tt.active {
					t.Errorf("%s: tracing config %v, want active %v", fn, mode, tt.active)
				}
				for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"} {
					if v, ok := vars[k]; ok {
						t.Errorf("%s: %s=%v: the metrics would leave EMF for OTLP", fn, k, v)
					}
				}
				if v := vars["OTEL_METRICS_EXPORTER"]; v != nil {
					t.Errorf("%s: OTEL_METRICS_EXPORTER=%v, want the metrics on", fn, v)
				}
				var xrayGot []string
				for perm := range rolePermissionsIn(t, tt.template, fn+"FunctionServiceRole") {
					if strings.HasPrefix(perm, "xray:") {
						xrayGot = append(xrayGot, perm)
					}
				}
				slices.Sort(xrayGot)
				if want := xrayActions; !tt.active && xrayGot != nil || tt.active && !slices.Equal(xrayGot, want) {
					t.Errorf("%s: X-Ray permissions %v, want %v", fn, xrayGot, map[bool][]string{true: want}[tt.active])
				}
				if tt.exporter == "" {
					for _, k := range []string{envTracesEndpoint, envCollectorConfig, envUserEndpoint} {
						if v, ok := vars[k]; ok {
							t.Errorf("%s: %s=%v with tracing off", fn, k, v)
						}
					}
					continue
				}
				checkCollector(t, fn, vars, tt.exporter, user)
			}
			if want := crawlFunctionsIn(tt.template); n != want {
				t.Errorf("%d crawl functions, want %d", n, want)
			}
		})
	}
}

// checkCollector reads the configuration a function's OPENTELEMETRY_COLLECTOR_CONFIG_URI names
// from the files the configuration layer ships, and holds it to the function's environment.
func checkCollector(t *testing.T, fn string, vars map[string]any, exporter, user string) {
	t.Helper()
	uri, _ := vars[envCollectorConfig].(string)
	rel, ok := strings.CutPrefix(uri, "/opt/")
	if !ok {
		t.Fatalf("%s: %s=%q, want a file of the configuration layer under /opt", fn, envCollectorConfig, uri)
	}
	dir := t.TempDir()
	if err := writeCollectorConfigs(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		t.Fatalf("%s: the configuration layer has no %s: %v", fn, uri, err)
	}
	var c collectorConfig
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %s: %v", fn, uri, err)
	}
	traces, ok := c.Service.Pipelines["traces"]
	if !ok || !slices.Equal(traces.Exporters, []string{exporter}) || len(c.Service.Pipelines) != 1 {
		t.Errorf("%s: %s pipelines %+v, want only traces, exported by %s", fn, uri, c.Service.Pipelines, exporter)
	}
	if _, ok := c.Exporters[exporter]; !ok {
		t.Errorf("%s: %s defines no %s exporter", fn, uri, exporter)
	}
	// The functions' spans go to the receiver of the pipeline.
	spans, _ := vars[envTracesEndpoint].(string)
	u, err := url.Parse(spans)
	if err != nil || u.Path != "/v1/traces" {
		t.Fatalf("%s: %s=%q, want an OTLP/HTTP traces URL", fn, envTracesEndpoint, spans)
	}
	recv := c.Receivers[traces.Receivers[0]].Protocols["http"].Endpoint
	if len(traces.Receivers) != 1 || recv != u.Host {
		t.Errorf("%s: the spans go to %s, the pipeline receives on %v at %q", fn, u.Host, traces.Receivers, recv)
	}
	if exporter != "otlphttp" {
		if v, ok := vars[envUserEndpoint]; ok {
			t.Errorf("%s: %s=%v without an OTLP target", fn, envUserEndpoint, v)
		}
		return
	}
	// The user's endpoint reaches the exporter through the variable its configuration reads.
	ref, _ := c.Exporters[exporter]["endpoint"].(string)
	name, ok := strings.CutPrefix(strings.TrimSuffix(ref, "}"), "${env:")
	if !ok || vars[name] != user {
		t.Errorf("%s: the exporter's endpoint is %q, and %s=%v: want the user's %s", fn, ref, name, vars[name], user)
	}
}
