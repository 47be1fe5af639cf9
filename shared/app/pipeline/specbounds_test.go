package pipeline

import (
	"strings"
	"testing"

	"github.com/crawlstack/crawlstack/shared/crawl/crawlspec"
)

// A stack that fetches through proxies refuses a spec asking for the chrome TLS fingerprint, which
// would otherwise fail every request of the crawl as internal: proxies given as URLs or by their
// secret.
func TestASpecAskingForChromeThroughProxiesIsRefused(t *testing.T) {
	spec := []byte("version: 1\nseeds: [http://127.0.0.1/]\ntls_fingerprint: chrome\n")
	for name, c := range map[string]Config{
		"proxies":        {Proxies: []string{"http://127.0.0.1:3128"}},
		"proxies secret": {ProxiesSecret: "ssm:/crawl/proxies"},
	} {
		_, err := crawlspec.Parse(spec, c.SpecBounds())
		if err == nil || !strings.Contains(err.Error(), "does not go through the proxies") {
			t.Errorf("%s: %v, want the spec refused", name, err)
		}
	}
	if _, err := crawlspec.Parse(spec, Config{}.SpecBounds()); err != nil {
		t.Errorf("no proxies: %v, want the spec taken", err)
	}
}
