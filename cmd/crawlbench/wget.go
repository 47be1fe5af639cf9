package main

import (
	"errors"
	"os/exec"
)

// wgetArgs are GNU wget's arguments for a recursive crawl of the site at url, as fast as it goes:
// one connection kept alive, robots.txt honoured (its default), every page saved into dir. The
// pages stay until the set of runs ends, as ours' files do: wget's --delete-after removed 10,000
// files during a set, and on ext4 without a journal the next run's file creates then step over
// every inode freed in the last minutes (docs/bench-history.md, round seventeen).
func wgetArgs(url, dir string) []string {
	return []string{"--recursive", "--level=inf", "--no-parent", "--no-directories",
		"--quiet", "--execute", "robots=on", "--directory-prefix", dir, url}
}

// wgetOK reports whether wget's exit error is only its "server issued an error response" status
// (8): the demo site's nofollow link is a 404, which wget follows.
func wgetOK(err error) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit) && exit.ExitCode() == 8
}
