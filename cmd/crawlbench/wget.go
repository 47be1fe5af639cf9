package main

import (
	"errors"
	"os/exec"
)

// wgetArgs are GNU wget's arguments for a recursive crawl of the site at url, as fast as it goes:
// one connection kept alive, robots.txt honoured (its default), every page saved into dir and
// deleted once its links are read.
func wgetArgs(url, dir string) []string {
	return []string{"--recursive", "--level=inf", "--no-parent", "--no-directories", "--delete-after",
		"--quiet", "--execute", "robots=on", "--directory-prefix", dir, url}
}

// wgetOK reports whether wget's exit error is only its "server issued an error response" status
// (8): the demo site's nofollow link is a 404, which wget follows.
func wgetOK(err error) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit) && exit.ExitCode() == 8
}
