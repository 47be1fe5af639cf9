package cli

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/crawlstack/crawlstack/shared/app/pipeline"
)

// The rule for every command: a flag on the command line wins; otherwise its environment variable
// (CRAWL_ and the flag's name in capitals, as the Lambda functions read the same settings); otherwise
// its default.

// envNames are the variables whose names are not CRAWL_ and the flag's name in capitals; "" is
// none: the flags that name what a command acts on (crawl optout's entry, crawl purge's target,
// crawls and dry run, crawl try's field and page) are never taken from the environment, where a
// forgotten variable would act on something else.
var envNames = map[string]string{"allow-port": "CRAWL_ALLOW_PORTS", "proxy": "CRAWL_PROXIES",
	"host": "", "prefix": "", "pattern": "", "url": "", "reason": "", "crawl": "", "dry-run": "",
	"css": "", "xpath": "", "attr": "", "all": "", "regexp": "", "base": "", "items": "", "meta": "", "follow": ""}

// envOf is the environment variable of the flag name.
func envOf(name string) string {
	if v, ok := envNames[name]; ok {
		return v
	}
	return "CRAWL_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// applyEnv sets each flag of fs that the command line did not give from its environment variable,
// when that is set. Lists are read as the functions read them: CRAWL_ALLOW_NET and
// CRAWL_ALLOW_PORTS comma-separated, CRAWL_INCLUDE and CRAWL_EXCLUDE one regexp a line or a JSON
// array. A bad value is an error that names the variable. The values are set on the flags
// themselves, so that fs.Visit still lists only what the command line gave.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := envOf(f.Name)
		if name == "" {
			return
		}
		v := strings.TrimSpace(getenv(name))
		if given[f.Name] || v == "" {
			return
		}
		values := []string{v}
		switch f.Name {
		case "allow-net", "allow-port", "proxy":
			values = strings.Split(v, ",")
		case "include", "exclude":
			var err error
			if values, err = pipeline.ParsePatternList(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %v", name, v, err))
				return
			}
		}
		for _, x := range values {
			if err := f.Value.Set(strings.TrimSpace(x)); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %v", name, v, err))
				return
			}
		}
	})
	return errors.Join(errs...)
}

// environ is how the commands read the environment (a variable, so that tests of Main can set it).
var environ = os.Getenv
