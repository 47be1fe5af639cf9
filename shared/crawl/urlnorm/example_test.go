package urlnorm_test

import (
	"fmt"
	"net/url"

	"github.com/crawlstack/crawlstack/shared/crawl/urlnorm"
)

func ExampleNormalize() {
	u, err := urlnorm.Normalize(" HTTP://user:pw@Bücher.Example:80/a/./b/../%7Ec?sid=1&q=é#top ")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(u)
	// Output: http://xn--bcher-kva.example/a/~c?q=%C3%A9
}

func ExampleResolve() {
	base, _ := url.Parse("http://example.com/dir/page.html")
	u, _ := urlnorm.Resolve(base, "../страница")
	fmt.Println(u)
	_, err := urlnorm.Resolve(base, "mailto:a@example.com")
	fmt.Println(err)
	// Output:
	// http://example.com/%D1%81%D1%82%D1%80%D0%B0%D0%BD%D0%B8%D1%86%D0%B0
	// scope: resolve "mailto:a@example.com": scheme "mailto" is not crawled
}
