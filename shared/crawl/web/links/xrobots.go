package links

import "strings"

// parameterised X-Robots-Tag directives: their colon does not start a user-agent prefix.
var paramDirectives = map[string]bool{
	"unavailable_after": true, "max-snippet": true, "max-image-preview": true, "max-video-preview": true,
}

// XRobotsTag reads the values of the X-Robots-Tag response header (one per header line) and
// reports noindex and nofollow ("none" sets both). A value may name a user agent
// ("googlebot: noindex, nofollow"); such directives apply only when the name equals uaToken,
// case-insensitively, until another name follows in the same value. Unprefixed directives apply
// to every crawler.
func XRobotsTag(values []string, uaToken string) (noindex, nofollow bool) {
	for _, v := range values {
		applies := true
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if name, rest, ok := strings.Cut(part, ":"); ok {
				name = strings.ToLower(strings.TrimSpace(name))
				if !paramDirectives[name] {
					applies = uaToken != "" && strings.EqualFold(name, uaToken)
					part = rest
				}
			}
			if !applies {
				continue
			}
			ni, nf := robotsDirectives(part)
			noindex = noindex || ni
			nofollow = nofollow || nf
		}
	}
	return noindex, nofollow
}
