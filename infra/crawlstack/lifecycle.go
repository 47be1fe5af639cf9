package crawlstack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"
)

// PrefixLifecycle is what S3 does with the objects under one key prefix as
// they age. Zero days means never, so the zero value keeps objects where they
// are, for good.
type PrefixLifecycle struct {
	// TransitionDays is the object age at which S3 moves it to Standard-IA;
	// 0 means never. S3 moves nothing there before 30 days, and never an
	// object smaller than 128 KB (the bucket pins that default).
	TransitionDays int
	// ExpirationDays is the object age at which S3 deletes it; 0 means never.
	ExpirationDays int
}

// infrequentAccessMinDays is both the age before which S3 does not move an
// object to Standard-IA and the storage duration Standard-IA bills at least.
const infrequentAccessMinDays = 30

// lifecyclePrefixes pairs each prefix that has lifecycle settings with the
// context key stem of its settings and the settings themselves.
func (c Config) lifecyclePrefixes() []struct {
	key, prefix string
	lc          PrefixLifecycle
} {
	return []struct {
		key, prefix string
		lc          PrefixLifecycle
	}{
		{"pages", PagesPrefix, c.Pages},
		{"records", RecordsPrefix, c.Records},
		{"quarantine", QuarantinePrefix, c.Quarantine},
	}
}

// lifecycleRules are the bucket's rules: abandoned multipart uploads go after
// 7 days, and each of pages/, records/ and quarantine/ gets a rule of its own
// when it has anything to do (a rule without an action is invalid).
func lifecycleRules(cfg Config) *[]*awss3.LifecycleRule {
	rules := []*awss3.LifecycleRule{{
		Id:                                  jsii.String("abort-incomplete-uploads"),
		AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(7)),
	}}
	for _, p := range cfg.lifecyclePrefixes() {
		if p.lc.TransitionDays == 0 && p.lc.ExpirationDays == 0 {
			continue
		}
		rule := &awss3.LifecycleRule{
			Id:     jsii.String(p.key),
			Prefix: jsii.String(p.prefix),
		}
		if d := p.lc.TransitionDays; d > 0 {
			rule.Transitions = &[]*awss3.Transition{{
				StorageClass:    awss3.StorageClass_INFREQUENT_ACCESS(),
				TransitionAfter: awscdk.Duration_Days(jsii.Number(float64(d))),
			}}
		}
		if d := p.lc.ExpirationDays; d > 0 {
			rule.Expiration = awscdk.Duration_Days(jsii.Number(float64(d)))
		}
		rules = append(rules, rule)
	}
	return &rules
}

// validateLifecycle reports the lifecycle settings S3 would reject, and those
// that would cost more than leaving the objects alone.
func (c Config) validateLifecycle(bad func(key, format string, args ...any)) {
	for _, p := range c.lifecyclePrefixes() {
		tKey, eKey := p.key+"TransitionDays", p.key+"ExpirationDays"
		t, e := p.lc.TransitionDays, p.lc.ExpirationDays
		if t < 0 {
			bad(tKey, "must be 0 (never) or more, got %d", t)
		} else if t > 0 && t < infrequentAccessMinDays {
			bad(tKey, "must be 0 (never) or at least %d: S3 moves objects to Standard-IA only once they are %d days old, got %d",
				infrequentAccessMinDays, infrequentAccessMinDays, t)
		}
		if e < 0 {
			bad(eKey, "must be 0 (never) or more, got %d", e)
		}
		if t <= 0 || e <= 0 {
			continue
		}
		switch {
		case e <= t:
			bad(eKey, "deletes %s objects after %d days, not after context %q moves them to Standard-IA after %d days: "+
				"S3 rejects that rule; expire later, or set %s to 0", p.prefix, e, tKey, t, tKey)
		case e-t < infrequentAccessMinDays:
			bad(eKey, "deletes %s objects %d days after context %q moves them to Standard-IA, but Standard-IA bills at least %d days, "+
				"which costs more than keeping them in Standard: expire at day %d or later, or set %s to 0",
				p.prefix, e-t, tKey, infrequentAccessMinDays, t+infrequentAccessMinDays, tKey)
		}
	}
}
