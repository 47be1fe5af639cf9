package awsports

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The SSM and Secrets Manager clients cost parse and schedule 6 to 15 ms of each cold start
// (docs/localstack.md, cold starts), so only the fetch function, which reads the proxies'
// secret, links them. The go command's own list of each function's dependencies is the oracle.
func TestOnlyFetchLinksTheSecretClients(t *testing.T) {
	clients := []string{"github.com/aws/aws-sdk-go-v2/service/ssm", "github.com/aws/aws-sdk-go-v2/service/secretsmanager"}
	for fn, want := range map[string]bool{"fetch": true, "parse": false, "schedule": false} {
		out, err := exec.Command("go", "list", "-deps", "github.com/crawlstack/crawlstack/functions/"+fn).Output()
		if err != nil {
			t.Fatalf("go list -deps functions/%s: %v", fn, err)
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, "github.com/crawlstack/crawlstack/shared/app/awsports") {
			t.Fatalf("functions/%s does not build on awsports: the list proves nothing\n%s", fn, out)
		}
		for _, c := range clients {
			if got := slices.Contains(deps, c); got != want {
				t.Errorf("functions/%s links %s: %v; want %v", fn, c, got, want)
			}
		}
	}
}
