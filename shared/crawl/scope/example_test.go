package scope_test

import (
	"fmt"
	"net/url"
	"time"

	"github.com/crawlstack/crawlstack/shared/crawl/scope"
)

func ExampleRules_Check() {
	rules := scope.DefaultRules()
	rules.Mode = scope.Domain
	seed, _ := url.Parse("http://www.example.co.uk/")
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for _, s := range []string{
		"http://shop.example.co.uk/",
		"http://other.co.uk/",
		"http://www.example.co.uk/events/2040/01/",
	} {
		u, _ := url.Parse(s)
		fmt.Println(rules.Check(seed, u, 1, now))
	}
	// Output:
	// <nil>
	// scope: domain "other.co.uk" is not the seed's domain "example.co.uk"
	// trap: calendar year 2040 is over 3 years ahead
}
