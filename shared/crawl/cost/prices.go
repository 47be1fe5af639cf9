package cost

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Price is one list price in US dollars, with where it comes from.
type Price struct {
	// USD is the price in dollars per the unit that the Prices field names.
	USD float64
	// Source is the page that publishes the price, or "override" for a price set by Override.
	Source string
	// Checked is the date (YYYY-MM-DD) the price was last checked against its source.
	Checked string
	// Note says how the price was checked and what is uncertain about it.
	Note string
}

// Prices are the list prices that turn Units into dollars. It is a plain struct: a caller may
// change any field, or start from DefaultPrices and override some with Prices.Override.
type Prices struct {
	// SQSPerMillion is the price of a million SQS standard-queue requests.
	SQSPerMillion Price
	// DynamoDBWritePerMillion is the price of a million on-demand write request units.
	DynamoDBWritePerMillion Price
	// DynamoDBReadPerMillion is the price of a million on-demand read request units.
	DynamoDBReadPerMillion Price
	// S3ClassAPerThousand is the price of a thousand S3 Standard PUT, COPY, POST or LIST requests.
	S3ClassAPerThousand Price
	// S3ClassBPerThousand is the price of a thousand S3 Standard GET, SELECT or other requests.
	S3ClassBPerThousand Price
	// LambdaRequestsPerMillion is the price of a million Lambda requests.
	LambdaRequestsPerMillion Price
	// LambdaGBSecond is the price of one GB-second of Lambda compute on arm64.
	LambdaGBSecond Price
	// LogsPerGB is the price of one GB (2^30 bytes) ingested by CloudWatch Logs.
	LogsPerGB Price

	// The prices by the month, of what a stack is billed for whether or not a crawl runs
	// (Prices.Monthly).

	// CustomMetricMonth is the price of one custom metric series a month, billed by the hour
	// (a 730th of it) in each hour it receives data.
	CustomMetricMonth Price
	// AlarmMetricMonth is the price of one standard-resolution alarm metric a month: an alarm
	// is billed for each metric it reads.
	AlarmMetricMonth Price
	// DashboardMonth is the price of one CloudWatch dashboard a month (an account's first 3 are free).
	DashboardMonth Price
	// KMSKeyMonth is the price of one customer managed KMS key a month.
	KMSKeyMonth Price
	// DynamoDBStorageGBMonth and DynamoDBPITRGBMonth are the prices of a GB-month of table size,
	// and of its point-in-time recovery.
	DynamoDBStorageGBMonth, DynamoDBPITRGBMonth Price
	// S3StandardGBMonth and S3StandardIAGBMonth are the prices of a GB-month in S3 Standard and
	// in S3 Standard-IA (where the stack moves large WARC files after pagesTransitionDays).
	S3StandardGBMonth, S3StandardIAGBMonth Price
	// LogsStorageGBMonth is the price of a GB-month of CloudWatch Logs kept.
	LogsStorageGBMonth Price
}

// HoursPerMonth is the month that AWS's monthly prices are pro-rated by.
const HoursPerMonth = 730

// checked is the date the default prices were last checked.
const checked = "2026-12-01"

// DefaultPrices returns the us-east-1 list prices, without free tiers or volume discounts, as
// checked on the date each carries. AWS's own pricing pages render their price tables in the
// browser, so the figures were confirmed on the pages each Note names; docs/cost.md lists them.
func DefaultPrices() Prices {
	return Prices{
		SQSPerMillion: Price{USD: 0.40, Source: "https://aws.amazon.com/sqs/pricing/", Checked: checked,
			Note: "standard queue, 1M to 100B requests a month; confirmed on cloudburn.io (March 2026) " +
				"and factualminds.com (June 2026)"},
		DynamoDBWritePerMillion: Price{USD: 0.625, Source: "https://aws.amazon.com/dynamodb/pricing/on-demand/", Checked: checked,
			Note: "Standard table class; confirmed on airbyte.com; one older page still quotes the price " +
				"before the November 2024 cut, twice this"},
		DynamoDBReadPerMillion: Price{USD: 0.125, Source: "https://aws.amazon.com/dynamodb/pricing/on-demand/", Checked: checked,
			Note: "Standard table class; confirmed on airbyte.com; one older page still quotes the price " +
				"before the November 2024 cut, twice this"},
		S3ClassAPerThousand: Price{USD: 0.005, Source: "https://aws.amazon.com/s3/pricing/", Checked: checked,
			Note: "S3 Standard PUT, COPY, POST, LIST; confirmed on cloudkaramchari.com"},
		S3ClassBPerThousand: Price{USD: 0.0004, Source: "https://aws.amazon.com/s3/pricing/", Checked: checked,
			Note: "S3 Standard GET, SELECT and others; NOT confirmed by a search: the design's starting value"},
		LambdaRequestsPerMillion: Price{USD: 0.20, Source: "https://aws.amazon.com/lambda/pricing/", Checked: checked,
			Note: "x86 and arm64 alike; confirmed on a third-party Lambda cost note (git.mcrn.ar) and on AWS's " +
				"page as transcribed by api-evangelist"},
		LambdaGBSecond: Price{USD: 0.0000133334, Source: "https://aws.amazon.com/lambda/pricing/", Checked: checked,
			Note: "arm64, first 7.5 billion GB-seconds a month; confirmed on cloudchipr.com and in artillery's price table"},
		LogsPerGB: Price{USD: 0.50, Source: "https://aws.amazon.com/cloudwatch/pricing/", Checked: checked,
			Note: "Standard log class ingestion; confirmed on factualminds.com and coralogix.com; Lambda logs are " +
				"billed as vended logs in volume tiers that start at this price (not confirmed here)"},
		CustomMetricMonth: Price{USD: 0.30, Source: "https://aws.amazon.com/cloudwatch/pricing/", Checked: checkedMonthly,
			Note: "first 10,000 metrics (then $0.10, $0.05, $0.02 in tiers); \"All custom metrics charges are prorated by the hour and " +
				"metered only when you send metrics to CloudWatch\" (the page, as quoted by public write-ups found on 2026-12-05); " +
				"EMF dimensions make series"},
		AlarmMetricMonth: Price{USD: 0.10, Source: "https://aws.amazon.com/cloudwatch/pricing/", Checked: checkedMonthly,
			Note: "standard resolution (60 s); a metric-math alarm is billed for each metric it reads; an account's first 10 are free"},
		DashboardMonth: Price{USD: 3.00, Source: "https://aws.amazon.com/cloudwatch/pricing/", Checked: checkedMonthly,
			Note: "an account's first 3 dashboards (up to 50 metrics each) are free"},
		KMSKeyMonth: Price{USD: 1.00, Source: "https://aws.amazon.com/kms/pricing/", Checked: checkedMonthly,
			Note: "customer managed key, pro-rated by the hour; not billed while pending deletion"},
		DynamoDBStorageGBMonth: Price{USD: 0.25, Source: "https://aws.amazon.com/dynamodb/pricing/on-demand/", Checked: checkedMonthly,
			Note: "Standard table class, beyond the first 25 GB a month"},
		DynamoDBPITRGBMonth: Price{USD: 0.20, Source: "https://aws.amazon.com/dynamodb/pricing/on-demand/", Checked: checkedMonthly,
			Note: "continuous backups, by the table's size"},
		S3StandardGBMonth: Price{USD: 0.023, Source: "https://aws.amazon.com/s3/pricing/", Checked: checkedMonthly,
			Note: "first 50 TB a month"},
		S3StandardIAGBMonth: Price{USD: 0.0125, Source: "https://aws.amazon.com/s3/pricing/", Checked: checkedMonthly,
			Note: "at least 128 KB and 30 days an object are billed"},
		LogsStorageGBMonth: Price{USD: 0.03, Source: "https://aws.amazon.com/cloudwatch/pricing/", Checked: checkedMonthly,
			Note: "archived logs, compressed"},
	}
}

// checkedMonthly is the date the monthly prices were last checked (docs/cost.md, Prices).
const checkedMonthly = "2026-12-05"

// priceKeys maps the names that Override accepts to the Prices fields.
var priceKeys = map[string]func(*Prices) *Price{
	"sqs":             func(p *Prices) *Price { return &p.SQSPerMillion },
	"ddb_write":       func(p *Prices) *Price { return &p.DynamoDBWritePerMillion },
	"ddb_read":        func(p *Prices) *Price { return &p.DynamoDBReadPerMillion },
	"s3_put":          func(p *Prices) *Price { return &p.S3ClassAPerThousand },
	"s3_get":          func(p *Prices) *Price { return &p.S3ClassBPerThousand },
	"lambda_requests": func(p *Prices) *Price { return &p.LambdaRequestsPerMillion },
	"lambda_gbs":      func(p *Prices) *Price { return &p.LambdaGBSecond },
	"logs_gb":         func(p *Prices) *Price { return &p.LogsPerGB },
	"metric_month":    func(p *Prices) *Price { return &p.CustomMetricMonth },
	"alarm_month":     func(p *Prices) *Price { return &p.AlarmMetricMonth },
	"dashboard_month": func(p *Prices) *Price { return &p.DashboardMonth },
	"kms_key_month":   func(p *Prices) *Price { return &p.KMSKeyMonth },
	"ddb_gb_month":    func(p *Prices) *Price { return &p.DynamoDBStorageGBMonth },
	"pitr_gb_month":   func(p *Prices) *Price { return &p.DynamoDBPITRGBMonth },
	"s3_gb_month":     func(p *Prices) *Price { return &p.S3StandardGBMonth },
	"s3_ia_gb_month":  func(p *Prices) *Price { return &p.S3StandardIAGBMonth },
	"logs_gb_month":   func(p *Prices) *Price { return &p.LogsStorageGBMonth },
}

// PriceKeys returns the names that Override accepts, sorted.
func PriceKeys() []string {
	keys := make([]string, 0, len(priceKeys))
	for k := range priceKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Override returns p with the prices that s names replaced. s is a comma-separated list of
// name=dollars, such as "sqs=0.40,ddb_write=0.625", in the unit of the field each name stands
// for: sqs, ddb_write, ddb_read, lambda_requests per million; s3_put, s3_get per thousand;
// lambda_gbs per GB-second; logs_gb per GB; and by the month metric_month, alarm_month,
// dashboard_month, kms_key_month, and per GB-month ddb_gb_month, pitr_gb_month, s3_gb_month,
// s3_ia_gb_month, logs_gb_month. An empty s changes nothing. An unknown or repeated
// name, or a price that is not a finite number at least zero, is an error.
func (p Prices) Override(s string) (Prices, error) {
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			return p, fmt.Errorf("parse prices: %q: want name=dollars", part)
		}
		field, known := priceKeys[name]
		if !known {
			return p, fmt.Errorf("parse prices: unknown name %q (known: %s)", name, strings.Join(PriceKeys(), ", "))
		}
		if seen[name] {
			return p, fmt.Errorf("parse prices: %s given twice", name)
		}
		seen[name] = true
		usd, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return p, fmt.Errorf("parse prices: %s: %q is not a number", name, value)
		}
		if usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0) {
			return p, fmt.Errorf("parse prices: %s: %q is not a price (want a finite number >= 0)", name, value)
		}
		*field(&p) = Price{USD: usd, Source: "override"}
	}
	return p, nil
}

// Costs are dollars by item, and their total.
type Costs struct {
	// SQS is the cost of SQS requests.
	SQS float64
	// DynamoDB is the cost of DynamoDB read and write request units.
	DynamoDB float64
	// S3 is the cost of S3 requests of both classes.
	S3 float64
	// Lambda is the cost of Lambda requests and compute.
	Lambda float64
	// Logs is the cost of CloudWatch Logs ingestion.
	Logs float64
	// Metrics is the cost of custom metric series-hours, at CustomMetricMonth a 730th an hour.
	Metrics float64
	// Total is the sum of the items.
	Total float64
}

// bytesPerGB is the GB of CloudWatch Logs ingestion: 2^30 bytes, as AWS bills data.
const bytesPerGB = 1 << 30

// Cost returns what u costs at p. Storage, alarms, data transfer, free tiers and volume
// discounts are not included (the alarms and storage are by the month: Monthly).
func (p Prices) Cost(u Units) Costs {
	c := Costs{
		SQS: float64(u.SQSRequests) / 1e6 * p.SQSPerMillion.USD,
		DynamoDB: u.DynamoDBWriteUnits/1e6*p.DynamoDBWritePerMillion.USD +
			u.DynamoDBReadUnits/1e6*p.DynamoDBReadPerMillion.USD,
		S3: float64(u.S3ClassA)/1e3*p.S3ClassAPerThousand.USD +
			float64(u.S3ClassB)/1e3*p.S3ClassBPerThousand.USD,
		Lambda: float64(u.LambdaRequests)/1e6*p.LambdaRequestsPerMillion.USD +
			u.LambdaGBSeconds*p.LambdaGBSecond.USD,
		Logs:    float64(u.LogBytes) / bytesPerGB * p.LogsPerGB.USD,
		Metrics: u.MetricSeriesHours * p.CustomMetricMonth.USD / HoursPerMonth,
	}
	c.Total = c.SQS + c.DynamoDB + c.S3 + c.Lambda + c.Logs + c.Metrics
	return c
}
