package cfntemplate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/testkit/cfntemplate"
)

func TestResolve(t *testing.T) {
	p := cfntemplate.Physical{Region: "us-east-1", Account: "000000000000",
		Refs:  map[string]string{"Bucket83908E77": "my-bucket", "Queue1": "http://127.0.0.1:9/000000000000/q"},
		Attrs: map[string]map[string]string{"Bucket83908E77": {"Arn": "arn:aws:s3:::my-bucket"}}}
	tests := []struct {
		name, in, want string
	}{
		{"Ref", `{"Ref": "Bucket83908E77"}`, `"my-bucket"`},
		{"GetAtt", `{"Fn::GetAtt": ["Bucket83908E77", "Arn"]}`, `"arn:aws:s3:::my-bucket"`},
		{"JoinOfGetAtt", `{"Fn::Join": ["", [{"Fn::GetAtt": ["Bucket83908E77", "Arn"]}, "/pages/*"]]}`, `"arn:aws:s3:::my-bucket/pages/*"`},
		{"Partition", `{"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":iam::aws:policy/x"]]}`, `"arn:aws:iam::aws:policy/x"`},
		{"Sub", `{"Fn::Sub": "cdk-${AWS::AccountId}-${AWS::Region}-${Bucket83908E77.Arn}"}`, `"cdk-000000000000-us-east-1-arn:aws:s3:::my-bucket"`},
		{"Nested", `{"Env": {"A": {"Ref": "Queue1"}, "B": "plain"}, "N": [1, {"Ref": "Bucket83908E77"}]}`,
			`{"Env":{"A":"http://127.0.0.1:9/000000000000/q","B":"plain"},"N":[1,"my-bucket"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var in any
			if err := json.Unmarshal([]byte(tt.in), &in); err != nil {
				t.Fatal(err)
			}
			out, err := p.Resolve(in)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(out)
			if string(got) != tt.want {
				t.Errorf("Resolve(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func TestResolveErrorsNameWhatIsMissing(t *testing.T) {
	p := cfntemplate.Physical{Refs: map[string]string{}, Attrs: map[string]map[string]string{}}
	for in, want := range map[string]string{
		`{"Ref": "Gone"}`:                        "Ref Gone",
		`{"Fn::GetAtt": ["Gone", "Arn"]}`:        "Fn::GetAtt Gone.Arn",
		`{"Fn::ImportValue": "x"}`:               "Fn::ImportValue is not supported",
		`{"X": {"Fn::Sub": "${Gone.QueueUrl}"}}`: "Gone.QueueUrl",
	} {
		var v any
		if err := json.Unmarshal([]byte(in), &v); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Resolve(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve(%s) = %v, want an error naming %q", in, err, want)
		}
	}
}
