package crawlstack

import (
	"embed"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
)

// Tracing on Lambda. One value turns it on: OTelCollectorLayerARN. Then every function gets
//   - the collector layer (an OpenTelemetry collector running as a Lambda extension);
//   - the collector's configuration, in a layer of the stack's own (collector/*.yaml, under
//     /opt/crawlstack/), named by OPENTELEMETRY_COLLECTOR_CONFIG_URI;
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT at the collector's receiver, and nothing for metrics:
//     package telemetry sends the spans there and keeps writing the metrics as EMF lines, which the
//     dashboard and the alarms read;
//   - with X-Ray the target (the default), active tracing, which also grants the role
//     xray:PutTraceSegments and xray:PutTelemetryRecords for the collector's exporter; with
//     OTelTracesEndpoint, no X-Ray at all, and the endpoint in CRAWL_OTEL_TRACES_ENDPOINT for
//     the collector's otlphttp exporter.

// The tracing targets.
const (
	TracingOff  = ""
	TracingXRay = "xray"
	TracingOTLP = "otlp"
)

// Tracing is where the functions' spans go: TracingOff, TracingXRay or TracingOTLP.
func (c Config) Tracing() string {
	switch {
	case c.OTelCollectorLayerARN == "":
		return TracingOff
	case c.OTelTracesEndpoint != "":
		return TracingOTLP
	}
	return TracingXRay
}

// The variables tracing sets.
const (
	// envCollectorConfig names the collector's configuration (the collector layer reads it).
	envCollectorConfig = "OPENTELEMETRY_COLLECTOR_CONFIG_URI"
	// envTracesEndpoint is where package telemetry sends the spans: the collector's receiver.
	envTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	// envUserEndpoint carries OTelTracesEndpoint to collector/otlp.yaml.
	envUserEndpoint = "CRAWL_OTEL_TRACES_ENDPOINT"
)

// otelCollectorEndpoint is where the collector takes OTLP/HTTP spans (collector/*.yaml's
// receiver).
const otelCollectorEndpoint = "http://localhost:4318/v1/traces"

// collectorConfigDir is where the configuration layer puts its files (a layer unpacks into /opt).
const collectorConfigDir = "/opt/crawlstack/"

//go:embed collector/*.yaml
var collectorConfigs embed.FS

// otelLayerARN is a Lambda layer version ARN (any partition).
var otelLayerARN = regexp.MustCompile(`^arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:layer:[A-Za-z0-9_-]+:[0-9]+$`)

// validateTracing checks the layer ARN and the endpoint.
func (c Config) validateTracing(bad func(key, format string, args ...any)) {
	if a := c.OTelCollectorLayerARN; a != "" && !otelLayerARN.MatchString(a) {
		bad("otelCollectorLayerArn", "must be a Lambda layer version ARN like arn:aws:lambda:us-east-1:123456789012:layer:NAME:3, got %q", a)
	}
	e := c.OTelTracesEndpoint
	if e == "" {
		return
	}
	if c.OTelCollectorLayerARN == "" {
		bad("otelTracesEndpoint", "needs otelCollectorLayerArn: the collector layer is what sends the spans to %q", e)
	}
	u, err := url.Parse(e)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		bad("otelTracesEndpoint", "must be an OTLP/HTTP endpoint like https://otlp.example.com (the collector adds /v1/traces), got %q", e)
	}
}

// tracingEnv is the part of configEnv that tracing decides.
func tracingEnv(cfg Config) map[string]string {
	switch cfg.Tracing() {
	case TracingXRay:
		return map[string]string{envTracesEndpoint: otelCollectorEndpoint,
			envCollectorConfig: collectorConfigDir + "xray.yaml"}
	case TracingOTLP:
		return map[string]string{envTracesEndpoint: otelCollectorEndpoint,
			envCollectorConfig: collectorConfigDir + "otlp.yaml", envUserEndpoint: cfg.OTelTracesEndpoint}
	}
	return nil
}

// tracingProps are the functions' settings that tracing decides.
type tracingProps struct {
	Layers  *[]awslambda.ILayerVersion // nil: none
	Tracing awslambda.Tracing          // nil: Lambda's default (PassThrough)
}

// newTracing makes the collector's layers when tracing is on: the collector layer, referenced,
// and the configuration layer, from collector/*.yaml written into the cloud assembly's folder
// (the asset is staged from there, so cdk synth and the tests ship the same files).
func newTracing(stack awscdk.Stack, cfg Config) tracingProps {
	mode := cfg.Tracing()
	if mode == TracingOff {
		return tracingProps{}
	}
	dir := filepath.Join(*awscdk.Stage_Of(stack).Outdir(), "crawlstack-collector-config")
	if err := writeCollectorConfigs(dir); err != nil {
		panic("write the collector's configuration: " + err.Error()) // synth-time: fail fast
	}
	collector := awslambda.LayerVersion_FromLayerVersionArn(stack, jsii.String("OTelCollector"), jsii.String(cfg.OTelCollectorLayerARN))
	config := awslambda.NewLayerVersion(stack, jsii.String("OTelCollectorConfig"), &awslambda.LayerVersionProps{
		Code:                    awslambda.Code_FromAsset(jsii.String(dir), nil),
		CompatibleArchitectures: &[]awslambda.Architecture{awslambda.Architecture_ARM_64()},
		Description:             jsii.String("crawlstack: the OpenTelemetry collector's configuration (" + mode + ")"),
	})
	p := tracingProps{Layers: &[]awslambda.ILayerVersion{collector, config}}
	if mode == TracingXRay {
		p.Tracing = awslambda.Tracing_ACTIVE
	}
	return p
}

// writeCollectorConfigs writes collector/*.yaml into dir/crawlstack/, which the layer unpacks as
// collectorConfigDir.
func writeCollectorConfigs(dir string) error {
	out := filepath.Join(dir, "crawlstack")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	names, err := fs.Glob(collectorConfigs, "collector/*.yaml")
	if err != nil {
		return err
	}
	for _, n := range names {
		b, err := collectorConfigs.ReadFile(n)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, filepath.Base(n)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
