package crawlstack

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agnivade/levenshtein"
)

// ContextGetter returns the context value of key, or nil when it is unset.
// Values come as strings from `cdk -c` and as JSON values from cdk.json.
type ContextGetter func(key string) any

// ConfigFromContext reads every [ContextKeys] entry over [DefaultConfig] and
// validates the result. The error lists every bad value, not just the first: a value of the
// wrong type is named with the values that fail validation.
func ConfigFromContext(get ContextGetter) (Config, error) {
	cfg := DefaultConfig()
	var errs []error
	for _, k := range contextKeys(&cfg) {
		v := get(k.name)
		if v == nil {
			continue
		}
		if err := k.set(v); err != nil {
			errs = append(errs, fmt.Errorf("context %q: %w", k.name, err))
		}
	}
	// A key that did not set keeps its default, which validates: the rest are checked too.
	if err := errors.Join(append(errs, cfg.Validate())...); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// ConfigFromContextMap is ConfigFromContext over all, the whole CDK context (cdk.json's context
// and every -c): it also refuses a key that looks like one of the crawler's and is not
// (`-c maxPage=5`), with the key it likely meant, in the same list as the bad values.
func ConfigFromContextMap(all map[string]any) (Config, error) {
	cfg, err := ConfigFromContext(func(key string) any { return all[key] })
	if unknown := UnknownContextKeys(slices.Collect(maps.Keys(all))); unknown != nil {
		return Config{}, errors.Join(unknown, err)
	}
	return cfg, err
}

// ours matches a key written as the crawler's are (camelCase, or snake_case by mistake); CDK's
// own keys hold ':', '/', '@' or '-' ("@aws-cdk/core:...", "aws:cdk:...", "acknowledged-issue-numbers").
var ours = regexp.MustCompile(`^[a-z][A-Za-z0-9_]*$`)

// UnknownContextKeys names, with a suggestion each, the keys that look like the crawler's and are
// none of [ContextKeys], in name order; nil when there is none.
func UnknownContextKeys(keys []string) error {
	known := ContextKeys()
	var errs []error
	for _, k := range slices.Sorted(slices.Values(keys)) {
		if !ours.MatchString(k) || slices.Contains(known, k) {
			continue
		}
		msg := fmt.Sprintf("context %q: not a setting of this stack", k)
		if near := nearestKey(k, known); near != "" {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		errs = append(errs, errors.New(msg+" (docs/deploy.md lists the settings)"))
	}
	return errors.Join(errs...)
}

// nearestKey is the known key closest to k: the same but for case and underscores, or within a
// few edits; "" when none is close.
func nearestKey(k string, known []string) string {
	fold := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }
	best, bestD := "", 4
	for _, n := range known {
		if fold(n) == fold(k) {
			return n
		}
		if d := levenshtein.ComputeDistance(fold(k), fold(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// ContextKeys lists the context keys ConfigFromContext reads, in order.
func ContextKeys() []string {
	var cfg Config
	var names []string
	for _, k := range contextKeys(&cfg) {
		names = append(names, k.name)
	}
	return names
}

type contextKey struct {
	name string
	set  func(any) error
}

func contextKeys(c *Config) []contextKey {
	keys := []contextKey{
		{"distDir", stringInto(&c.DistDir)},
		{"scope", stringInto(&c.Scope)},
		{"maxDepth", intInto(&c.MaxDepth)},
		{"maxPages", intInto(&c.MaxPages)},
		{"maxPagesPerHost", intInto(&c.MaxPagesPerHost)},
		{"include", patternsInto(&c.Include)},
		{"exclude", patternsInto(&c.Exclude)},
		{"hostRps", floatInto(&c.HostRPS)},
		{"budgetUsd", floatInto(&c.BudgetUSD)},
		{"userAgent", stringInto(&c.UserAgent)},
		{"tlsFingerprint", stringInto(&c.TLSFingerprint)},
		{"proxies", stringInto(&c.Proxies)},
		{"proxyRotation", stringInto(&c.ProxyRotation)},
		{"proxiesSecret", stringInto(&c.ProxiesSecret)},
		{"secretHeaderParameterPrefix", stringInto(&c.SecretHeaderParameterPrefix)},
		{"secretHeaderSecretPrefix", stringInto(&c.SecretHeaderSecretPrefix)},
		{"recordStreamQueueArn", stringInto(&c.RecordStreamQueueArn)},
		{"allowNet", stringInto(&c.AllowNet)},
		{"recrawlPrefix", stringInto(&c.RecrawlPrefix)},
		{"scheduleExpression", stringInto(&c.ScheduleExpression)},
		{"scheduleEnabled", boolInto(&c.ScheduleEnabled)},
		{"maxReceiveCount", intInto(&c.MaxReceiveCount)},
		{"maxTries", intInto(&c.MaxTries)},
		{"retryWaitSeconds", intInto(&c.RetryWaitSeconds)},
		{"retryClasses", stringInto(&c.RetryClasses)},
		{"warcIndex", stringInto(&c.WARCIndex)},
		{"logRetentionDays", intInto(&c.LogRetentionDays)},
		{"oldestMessageAlarmSeconds", intInto(&c.OldestMessageAlarmSeconds)},
		{"dashboard", boolInto(&c.Dashboard)},
		{"alarms", boolInto(&c.Alarms)},
		{"extraAlarms", boolInto(&c.ExtraAlarms)},
		{"alarmEmail", stringInto(&c.AlarmEmail)},
		{"finishEvent", boolInto(&c.FinishEvent)},
		{"finishCheckSeconds", intInto(&c.FinishCheckSeconds)},
		{"finishStallMinutes", intInto(&c.FinishStallMinutes)},
		{"finishMail", boolInto(&c.FinishMail)},
		{"otelCollectorLayerArn", stringInto(&c.OTelCollectorLayerARN)},
		{"otelTracesEndpoint", stringInto(&c.OTelTracesEndpoint)},
		{"metrics", boolInto(&c.Metrics)},
		{"retainData", boolInto(&c.RetainData)},
		{"logLevel", stringInto(&c.LogLevel)},
		{"systemLogLevel", stringInto(&c.SystemLogLevel)},
		{"pointInTimeRecovery", boolInto(&c.PointInTimeRecovery)},
		{"render", boolInto(&c.Render)},
		{"runUrls", intInto(&c.RunURLs)},
	}
	for _, p := range []struct {
		name string
		lc   *PrefixLifecycle
	}{{"pages", &c.Pages}, {"records", &c.Records}, {"quarantine", &c.Quarantine}} {
		keys = append(keys,
			contextKey{p.name + "TransitionDays", intInto(&p.lc.TransitionDays)},
			contextKey{p.name + "ExpirationDays", intInto(&p.lc.ExpirationDays)},
		)
	}
	for _, f := range []struct {
		name string
		fc   *FunctionConfig
	}{{FnSchedule, &c.Schedule}, {FnFetch, &c.Fetch}, {FnParse, &c.Parse}, {FnRender, &c.RenderFunction}, {FnFetchSlow, &c.FetchSlow}} {
		keys = append(keys,
			contextKey{f.name + "TimeoutSeconds", intInto(&f.fc.TimeoutSeconds)},
			contextKey{f.name + "MemoryMB", intInto(&f.fc.MemoryMB)},
			contextKey{f.name + "MaxConcurrency", intInto(&f.fc.MaxConcurrency)},
			contextKey{f.name + "BatchSize", intInto(&f.fc.BatchSize)},
			contextKey{f.name + "BatchWindowSeconds", intInto(&f.fc.BatchWindowSeconds)},
			contextKey{f.name + "BatchConcurrency", intInto(&f.fc.BatchConcurrency)},
		)
	}
	return keys
}

func stringInto(dst *string) func(any) error {
	return func(v any) error {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("want a string, got %T %v", v, v)
		}
		*dst = s
		return nil
	}
}

// patternsInto reads a list of regexps: a JSON array of strings from
// cdk.json, or a string holding one from `cdk -c include='["^https://a\\.test/"]'`.
// A regexp may contain commas, so a comma-separated string would be
// ambiguous; an empty string is an empty list.
func patternsInto(dst *[]string) func(any) error {
	const want = `want a JSON array of regexps such as ["^https://example\\.com/"]`
	return func(v any) error {
		var list []string
		switch x := v.(type) {
		case []any:
			for i, e := range x {
				s, ok := e.(string)
				if !ok {
					return fmt.Errorf("%s, got %T %v as item %d", want, e, e, i+1)
				}
				list = append(list, s)
			}
		case []string:
			list = x
		case string:
			if strings.TrimSpace(x) == "" {
				break
			}
			if err := json.Unmarshal([]byte(x), &list); err != nil {
				return fmt.Errorf("%s, got %q: %w", want, x, err)
			}
		default:
			return fmt.Errorf("%s, got %T %v", want, v, v)
		}
		*dst = list
		return nil
	}
}

func intInto(dst *int) func(any) error {
	return func(v any) error {
		switch x := v.(type) {
		case float64:
			if x != float64(int(x)) {
				return fmt.Errorf("want a whole number, got %v", x)
			}
			*dst = int(x)
		case string:
			n, err := strconv.Atoi(strings.TrimSpace(x))
			if err != nil {
				return fmt.Errorf("want a whole number, got %q", x)
			}
			*dst = n
		default:
			return fmt.Errorf("want a whole number, got %T %v", v, v)
		}
		return nil
	}
}

func floatInto(dst *float64) func(any) error {
	return func(v any) error {
		switch x := v.(type) {
		case float64:
			*dst = x
		case string:
			f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
			if err != nil {
				return fmt.Errorf("want a number, got %q", x)
			}
			*dst = f
		default:
			return fmt.Errorf("want a number, got %T %v", v, v)
		}
		return nil
	}
}

func boolInto(dst *bool) func(any) error {
	return func(v any) error {
		switch x := v.(type) {
		case bool:
			*dst = x
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(x))
			if err != nil {
				return fmt.Errorf("want true or false, got %q", x)
			}
			*dst = b
		default:
			return fmt.Errorf("want true or false, got %T %v", v, v)
		}
		return nil
	}
}
