package awsconfig_test

import (
	"context"
	"path/filepath"
	"testing"

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
