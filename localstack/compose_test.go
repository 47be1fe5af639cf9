// Package localstack_test checks what can be checked of the LocalStack setup without Docker: the
// compose file and the make targets that use it. Starting LocalStack needs Docker and an auth
// token, which the machines these tests run on may lack.
package localstack_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

type compose struct {
	Services map[string]struct {
		Image       string
		Ports       []string
		Environment map[string]string
		Volumes     []string
	}
}

// TestComposeFile parses localstack/docker-compose.yml: a pinned image, the auth token passed
// through from the environment (required), and every service the stack and cdklocal bootstrap use.
func TestComposeFile(t *testing.T) {
	b, err := os.ReadFile("docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c compose
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	ls, ok := c.Services["localstack"]
	if !ok {
		t.Fatalf("no localstack service in %v", c.Services)
	}
	if m := regexp.MustCompile(`^localstack/localstack:\$\{LOCALSTACK_VERSION:-(\d{4}\.\d{2}\.\d+)\}$`).FindStringSubmatch(ls.Image); m == nil {
		t.Errorf("image %q: want localstack/localstack pinned to a release, LOCALSTACK_VERSION to change it", ls.Image)
	}
	if tok := ls.Environment["LOCALSTACK_AUTH_TOKEN"]; !strings.HasPrefix(tok, "${LOCALSTACK_AUTH_TOKEN:?") {
		t.Errorf("LOCALSTACK_AUTH_TOKEN = %q: want it passed through from the environment, and required", tok)
	}
	services := strings.Split(ls.Environment["SERVICES"], ",")
	for _, s := range []string{"s3", "sqs", "dynamodb", "lambda", "events", "iam", "logs", "cloudwatch", "cloudformation", "ssm", "sts", "sns", "ecr"} {
		if !slices.Contains(services, s) {
			t.Errorf("SERVICES %v lacks %s", services, s)
		}
	}
	if !slices.Contains(ls.Ports, "127.0.0.1:4566:4566") || !slices.Contains(ls.Volumes, "/var/run/docker.sock:/var/run/docker.sock") {
		t.Errorf("ports %v, volumes %v: want 4566 on loopback and the Docker socket (Lambda runs in containers)", ls.Ports, ls.Volumes)
	}
}

// TestLocalStackDeployHasDeploysContext dry-runs `make deploy` and `make localstack-deploy`: the
// LocalStack one runs cdklocal (from infra/package.json) with exactly deploy's context.
func TestLocalStackDeployHasDeploysContext(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dry := func(target string) string {
		out, err := exec.Command("make", "-s", "-n", "-C", "..", target, "CDK_ARGS=-c maxPages=5 -c scheduleEnabled=true").CombinedOutput()
		if err != nil {
			t.Fatalf("make -n %s: %v\n%s", target, err, out)
		}
		return string(out)
	}
	contextOf := func(out, verb string) []string {
		for _, line := range strings.Split(out, "\n") {
			if i := strings.Index(line, verb); i >= 0 {
				return regexp.MustCompile(`-c \S+`).FindAllString(line[i:], -1)
			}
		}
		t.Fatalf("no %q in:\n%s", verb, out)
		return nil
	}
	want := contextOf(dry("deploy"), "npx cdk deploy")
	local := dry("localstack-deploy")
	if got := contextOf(local, "npx cdklocal deploy"); !slices.Equal(got, want) {
		t.Errorf("cdklocal deploy context %v, want deploy's %v", got, want)
	}
	if got := contextOf(local, "npx cdklocal bootstrap"); !slices.Equal(got, want) {
		t.Errorf("cdklocal bootstrap context %v, want deploy's %v", got, want)
	}
	pkg, err := os.ReadFile("../infra/package.json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(pkg), `"aws-cdk-local"`) || !strings.Contains(string(pkg), `"aws-cdk"`) {
		t.Errorf("infra/package.json lacks aws-cdk or aws-cdk-local, which npx cdklocal runs:\n%s", pkg)
	}
}
