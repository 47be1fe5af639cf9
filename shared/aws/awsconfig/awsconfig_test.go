package awsconfig_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/crawlstack/crawlstack/shared/aws/awsconfig"
)

func TestS3PathStyle(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"AWS", nil, false},
		{"General", map[string]string{"AWS_ENDPOINT_URL": "http://localhost:4566"}, true},
		{"S3Only", map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9000"}, true},
		{"OtherServiceOnly", map[string]string{"AWS_ENDPOINT_URL_SQS": "http://127.0.0.1:9324"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
			t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
			t.Setenv("AWS_REGION", "us-east-1")
			for _, v := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB"} {
				t.Setenv(v, "")
			}
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			cfg, err := awsconfig.Load(context.Background())
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			opts := awsconfig.NewClients(cfg).S3.Options()
			if opts.UsePathStyle != tt.want {
				t.Errorf("UsePathStyle = %v, want %v", opts.UsePathStyle, tt.want)
			}
			if !opts.DisableLogOutputChecksumValidationSkipped {
				t.Error("the skipped-checksum log line is not silenced")
			}
		})
	}
}

func TestHTTPTimeout(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_REGION", "us-east-1")
	for _, tt := range []struct {
		env  string
		want time.Duration
		err  bool
	}{{"", 0, false}, {"2500ms", 2500 * time.Millisecond, false}, {"soon", 0, true}, {"-1s", 0, true}} {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(awsconfig.EnvHTTPTimeout, tt.env)
			cfg, err := awsconfig.Load(context.Background())
			if tt.err {
				if err == nil {
					t.Fatalf("%s=%q loads", awsconfig.EnvHTTPTimeout, tt.env)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got time.Duration
			if c, ok := cfg.HTTPClient.(interface{ GetTimeout() time.Duration }); ok {
				got = c.GetTimeout()
			}
			if got != tt.want {
				t.Errorf("the HTTP client's timeout = %v, want %v", got, tt.want)
			}
		})
	}
}
