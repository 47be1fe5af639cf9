// Package stackrun plays AWS's part for a synthesized template of the crawler's stack on the local
// emulators: it creates the template's queues, table and bucket (Deploy, in CloudFormation's
// place), configures the bucket's notifications as CDK's notification handler does, gives each
// function the environment, role policies and SQS event source mapping that the template gives it
// (Read), and drives the functions from their queues (Sources, in the event source mappings'
// place).
package stackrun

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/crawlstack/crawlstack/shared/testkit/cfntemplate"
	"github.com/crawlstack/crawlstack/shared/testkit/iampolicy"
)

// Stack is a template read against a deployment.
type Stack struct {
	Physical  cfntemplate.Physical
	Functions map[string]*Function
	// Rules are the EventBridge rules that target a function.
	Rules []Rule
}

// Function is one crawler function as the template configures it.
type Function struct {
	// Name is the function's short name (schedule, fetch, parse): its CDK construct id without
	// "Function", lower-cased, as the Makefile's dist/<name>/bootstrap names it.
	Name      string
	LogicalID string
	// Env is the environment Lambda gives the function: the template's variables, resolved, and
	// the ones Lambda sets itself from the function's configuration.
	Env            map[string]string
	MemoryMB       int
	TimeoutSeconds int
	// Policy is every statement of the policies attached to the function's role.
	Policy iampolicy.Policy
	// Mapping is the function's SQS event source mapping (nil: none).
	Mapping *Mapping
}

// Mapping is an SQS event source mapping as the template configures it.
type Mapping struct {
	QueueURL, QueueARN string
	// DLQURL is the queue's dead-letter queue (its redrive policy's target), if any.
	DLQURL         string
	BatchSize      int
	Window         time.Duration
	ReportFailures bool
	MaxConcurrency int
	// Visibility is the queue's visibility timeout.
	Visibility time.Duration
}

// Rule is an EventBridge rule with a function target.
type Rule struct {
	LogicalID, ARN string
	Target         string // the function's Name
	Schedule       string
	Enabled        bool
}

// Read reads the crawler's functions, their role policies and event source mappings, and the
// rules, from t resolved against p.
func Read(t *cfntemplate.Template, p cfntemplate.Physical) (*Stack, error) {
	s := &Stack{Physical: p, Functions: map[string]*Function{}}
	byID := map[string]*Function{}
	for _, id := range t.OfType("AWS::Lambda::Function") {
		name, ok := functionName(t.Resources[id])
		if !ok {
			continue // not a crawler function (CDK's notification handler, say)
		}
		f, err := readFunction(t, p, id, name)
		if err != nil {
			return nil, fmt.Errorf("function %s: %w", id, err)
		}
		s.Functions[name] = f
		byID[id] = f
	}
	for _, id := range t.OfType("AWS::Lambda::EventSourceMapping") {
		r := t.Resources[id]
		target := refTo(r.Properties["FunctionName"])
		f := byID[target]
		if f == nil {
			return nil, fmt.Errorf("event source mapping %s: no crawler function %q", id, target)
		}
		m, err := readMapping(t, p, r)
		if err != nil {
			return nil, fmt.Errorf("event source mapping %s: %w", id, err)
		}
		f.Mapping = m
	}
	for _, id := range t.OfType("AWS::Events::Rule") {
		r := t.Resources[id]
		targets, _ := r.Properties["Targets"].([]any)
		for _, tg := range targets {
			m, _ := tg.(map[string]any)
			if f := byID[refTo(m["Arn"])]; f != nil {
				arn, err := p.ResolveString(map[string]any{"Fn::GetAtt": []any{id, "Arn"}})
				if err != nil {
					return nil, fmt.Errorf("rule %s: %w", id, err)
				}
				expr, _ := r.Properties["ScheduleExpression"].(string)
				state, _ := r.Properties["State"].(string)
				s.Rules = append(s.Rules, Rule{LogicalID: id, ARN: arn, Target: f.Name, Schedule: expr, Enabled: state == "ENABLED"})
			}
		}
	}
	return s, nil
}

// functionName tells a crawler function by its construct path, <stack>/<Name>Function/Resource.
func functionName(r cfntemplate.Resource) (string, bool) {
	parts := strings.Split(r.CDKPath(), "/")
	if len(parts) != 3 || parts[2] != "Resource" || !strings.HasSuffix(parts[1], "Function") {
		return "", false
	}
	if code, _ := r.Properties["Code"].(map[string]any); code["ZipFile"] != nil {
		return "", false // inline code: one of CDK's helpers
	}
	return strings.ToLower(strings.TrimSuffix(parts[1], "Function")), true
}

func readFunction(t *cfntemplate.Template, p cfntemplate.Physical, id, name string) (*Function, error) {
	props := t.Resources[id].Properties
	f := &Function{Name: name, LogicalID: id, Env: map[string]string{}}
	f.MemoryMB = intProp(props["MemorySize"], 128)
	f.TimeoutSeconds = intProp(props["Timeout"], 3)
	env, _ := props["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	for k, v := range vars {
		s, err := p.ResolveString(v)
		if err != nil {
			return nil, fmt.Errorf("variable %s: %w", k, err)
		}
		f.Env[k] = s
	}
	fnName, err := p.ResolveString(map[string]any{"Ref": id})
	if err != nil {
		return nil, err
	}
	// What Lambda sets from the function's configuration (the reserved variables).
	f.Env["AWS_LAMBDA_FUNCTION_NAME"] = fnName
	f.Env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] = strconv.Itoa(f.MemoryMB)
	f.Env["AWS_LAMBDA_FUNCTION_TIMEOUT"] = strconv.Itoa(f.TimeoutSeconds) // read by the emulator
	f.Env["AWS_REGION"], f.Env["AWS_DEFAULT_REGION"] = p.Region, p.Region
	if lc, ok := props["LoggingConfig"].(map[string]any); ok {
		if v, ok := lc["LogFormat"].(string); ok {
			f.Env["AWS_LAMBDA_LOG_FORMAT"] = v
		}
		if v, ok := lc["ApplicationLogLevel"].(string); ok {
			f.Env["AWS_LAMBDA_LOG_LEVEL"] = v
		}
	}
	role := refTo(props["Role"])
	if f.Policy, err = rolePolicy(t, p, role); err != nil {
		return nil, fmt.Errorf("role %s: %w", role, err)
	}
	return f, nil
}

// rolePolicy gathers the statements of the role's inline policies and of every AWS::IAM::Policy
// attached to it. Managed policies (AWSLambdaBasicExecutionRole: CloudWatch Logs, which Lambda
// writes for the function) are left out: the function's own code calls none of their actions.
func rolePolicy(t *cfntemplate.Template, p cfntemplate.Physical, role string) (iampolicy.Policy, error) {
	var pol iampolicy.Policy
	add := func(name string, doc any) error {
		resolved, err := p.Resolve(doc)
		if err != nil {
			return fmt.Errorf("policy %s: %w", name, err)
		}
		pol, err = pol.Parse(name, resolved)
		return err
	}
	inline, _ := t.Resources[role].Properties["Policies"].([]any)
	for _, ip := range inline {
		m, _ := ip.(map[string]any)
		name, _ := m["PolicyName"].(string)
		if err := add(name, m["PolicyDocument"]); err != nil {
			return nil, err
		}
	}
	for _, id := range t.OfType("AWS::IAM::Policy") {
		props := t.Resources[id].Properties
		roles, _ := props["Roles"].([]any)
		for _, r := range roles {
			if refTo(r) == role {
				if err := add(id, props["PolicyDocument"]); err != nil {
					return nil, err
				}
			}
		}
	}
	return pol, nil
}

func readMapping(t *cfntemplate.Template, p cfntemplate.Physical, r cfntemplate.Resource) (*Mapping, error) {
	src := refTo(r.Properties["EventSourceArn"])
	q, ok := t.Resources[src]
	if !ok || q.Type != "AWS::SQS::Queue" {
		return nil, fmt.Errorf("event source %q is not a queue of the template", src)
	}
	m := &Mapping{BatchSize: intProp(r.Properties["BatchSize"], 10),
		Window:     time.Duration(intProp(r.Properties["MaximumBatchingWindowInSeconds"], 0)) * time.Second,
		Visibility: time.Duration(intProp(q.Properties["VisibilityTimeout"], 30)) * time.Second}
	var err error
	if m.QueueURL, err = p.ResolveString(map[string]any{"Ref": src}); err != nil {
		return nil, err
	}
	if m.QueueARN, err = p.ResolveString(map[string]any{"Fn::GetAtt": []any{src, "Arn"}}); err != nil {
		return nil, err
	}
	if rp, ok := q.Properties["RedrivePolicy"].(map[string]any); ok {
		if m.DLQURL, err = p.ResolveString(map[string]any{"Ref": refTo(rp["deadLetterTargetArn"])}); err != nil {
			return nil, fmt.Errorf("dead-letter queue: %w", err)
		}
	}
	types, _ := r.Properties["FunctionResponseTypes"].([]any)
	for _, ty := range types {
		m.ReportFailures = m.ReportFailures || ty == "ReportBatchItemFailures"
	}
	if sc, ok := r.Properties["ScalingConfig"].(map[string]any); ok {
		m.MaxConcurrency = intProp(sc["MaximumConcurrency"], 0)
	}
	return m, nil
}

// refTo returns the logical id that v refers to ({"Ref": id} or {"Fn::GetAtt": [id, attr]}).
func refTo(v any) string {
	m, _ := v.(map[string]any)
	if id, ok := m["Ref"].(string); ok {
		return id
	}
	if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
		id, _ := ga[0].(string)
		return id
	}
	return ""
}

// intProp reads a number property (JSON numbers, or strings as CloudFormation allows), or def.
func intProp(v any, def int) int {
	switch x := v.(type) {
	case float64:
		return int(x)
	case string:
		if n, err := strconv.Atoi(x); err == nil {
			return n
		}
	}
	return def
}
