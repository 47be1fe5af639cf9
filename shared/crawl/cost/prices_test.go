package cost

import (
	"strings"
	"testing"
)

func TestCost(t *testing.T) {
	u := Units{
		SQSRequests:        2_000_000,
		DynamoDBWriteUnits: 1_000_000,
		DynamoDBReadUnits:  2_000_000,
		S3ClassA:           1_000,
		S3ClassB:           10_000,
		LambdaRequests:     1_000_000,
		LambdaGBSeconds:    100_000,
		LogBytes:           2 << 30,
	}
	// By hand at the default prices:
	// SQS 2M x $0.40/M = 0.80; DynamoDB 1M x 0.625/M + 2M x 0.125/M = 0.875;
	// S3 1k x 0.005/k + 10k x 0.0004/k = 0.009; Lambda 1M x 0.20/M + 100k x 0.0000133334 = 1.53334;
	// Logs 2 GB x 0.50 = 1.00; total 4.21734.
	want := Costs{SQS: 0.80, DynamoDB: 0.875, S3: 0.009, Lambda: 1.53334, Logs: 1.00, Total: 4.21734}
	got := DefaultPrices().Cost(u)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"SQS", got.SQS, want.SQS}, {"DynamoDB", got.DynamoDB, want.DynamoDB}, {"S3", got.S3, want.S3},
		{"Lambda", got.Lambda, want.Lambda}, {"Logs", got.Logs, want.Logs}, {"Total", got.Total, want.Total},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %.9f, want %.9f", c.name, c.got, c.want)
		}
	}
	if z := DefaultPrices().Cost(Units{}); z != (Costs{}) {
		t.Errorf("Cost(zero) = %+v, want zero", z)
	}
}

func TestDefaultPricesHaveSources(t *testing.T) {
	p := DefaultPrices()
	for _, k := range PriceKeys() {
		pr := *priceKeys[k](&p)
		if pr.USD <= 0 || !strings.HasPrefix(pr.Source, "https://aws.amazon.com/") || pr.Checked == "" {
			t.Errorf("%s = %+v, want a price, an aws.amazon.com source and a date", k, pr)
		}
	}
}

func TestOverride(t *testing.T) {
	p, err := DefaultPrices().Override(" sqs=0.5, ddb_write=1.25 ,s3_get=0,")
	if err != nil {
		t.Fatalf("ParsePrices: %v", err)
	}
	if p.SQSPerMillion.USD != 0.5 || p.SQSPerMillion.Source != "override" {
		t.Errorf("sqs = %+v, want 0.5 from override", p.SQSPerMillion)
	}
	if p.DynamoDBWritePerMillion.USD != 1.25 || p.S3ClassBPerThousand.USD != 0 {
		t.Errorf("ddb_write, s3_get = %v, %v, want 1.25, 0", p.DynamoDBWritePerMillion.USD, p.S3ClassBPerThousand.USD)
	}
	if p.DynamoDBReadPerMillion != DefaultPrices().DynamoDBReadPerMillion {
		t.Errorf("ddb_read = %+v, want the default", p.DynamoDBReadPerMillion)
	}
	if p, err := DefaultPrices().Override(""); err != nil || p != DefaultPrices() {
		t.Errorf(`DefaultPrices().Override("") = %+v, %v, want the defaults`, p, err)
	}
	// Every name is accepted.
	for _, k := range PriceKeys() {
		if _, err := DefaultPrices().Override(k + "=1"); err != nil {
			t.Errorf("DefaultPrices().Override(%s=1): %v", k, err)
		}
	}
}

func TestOverrideErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"sqs", "want name=dollars"},
		{"sqs=", "want name=dollars"},
		{"=1", "want name=dollars"},
		{"ec2=1", `unknown name "ec2"`},
		{"sqs=abc", `sqs: "abc" is not a number`},
		{"sqs=-1", "not a price"},
		{"sqs=NaN", "not a price"},
		{"sqs=+Inf", "not a price"},
		{"sqs=1,sqs=2", "sqs given twice"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := DefaultPrices().Override(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "parse prices: ") {
				t.Errorf("DefaultPrices().Override(%q) error = %v, want one containing %q", tt.in, err, tt.want)
			}
		})
	}
}
