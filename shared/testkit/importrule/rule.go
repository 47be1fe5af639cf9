package importrule

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Module is the root module's path.
const Module = "github.com/crawlstack/crawlstack"

// Allowed lists, for each group, the groups (or single packages, written group/name) that its
// packages may import. A group may import itself unless a rule below says otherwise.
var Allowed = map[string][]string{
	"port":      {"port"},
	"crawl":     {"port", "crawl", "observe/metrics"},
	"handler":   {"port", "crawl", "handler/sqsbatch", "handler/quarantine", "observe"},
	"aws":       {"port", "crawl", "aws"},
	"local":     {"port", "crawl", "local", "handler/sqsbatch"},
	"observe":   {"port", "crawl", "observe"},
	"ops":       {"port", "crawl", "ops"},
	"app":       {"port", "crawl", "handler", "aws", "local", "observe", "ops", "app", "demo"},
	"demo":      {},
	"testkit":   {"port", "crawl", "handler", "aws", "local", "observe", "ops", "app", "demo", "testkit"},
	"bench":     {"port", "crawl", "handler", "aws", "local", "observe", "ops", "app", "demo", "testkit", "bench"},
	"functions": {"crawl", "aws", "observe", "app"},
	"cmd":       {"port", "crawl", "handler", "aws", "local", "observe", "ops", "app", "demo", "bench"},
}

// DomainGroups are the groups of the crawl domain, which link no infrastructure.
var DomainGroups = []string{"port", "crawl"}

// Infrastructure are the module path prefixes that the domain must not link: the AWS SDK and
// aws-lambda-go (both under github.com/aws/), and OpenTelemetry's SDK and exporters.
var Infrastructure = []string{"github.com/aws/", "go.opentelemetry.io/otel/sdk", "go.opentelemetry.io/otel/exporters"}

// Package is what the rule needs of one package, as `go list -json` gives it.
type Package struct {
	ImportPath string
	Imports    []string // non-test imports
	Deps       []string // every package it links, transitively
}

// Violation is one broken rule.
type Violation struct {
	Package string
	Rule    string
}

func (v Violation) String() string { return v.Package + ": " + v.Rule }

// Place is where a package of the module sits: its group ("crawl", "functions" ...) and its path
// below shared/ (or below the module for functions/ and cmd/). ok is false for other packages.
func Place(importPath string) (group, rel string, ok bool) {
	rest, found := strings.CutPrefix(importPath, Module+"/")
	if !found {
		return "", "", false
	}
	if r, inShared := strings.CutPrefix(rest, "shared/"); inShared {
		rest = r
	}
	group, _, _ = strings.Cut(rest, "/")
	if _, known := Allowed[group]; !known {
		return "", "", false
	}
	return group, rest, true
}

// isTestKit tells whether a package (a path below shared/) is a test kit: in testkit/, or a
// conformance suite or reader beside what it tests (blobtest, warctest ...).
func isTestKit(rel string) bool {
	return strings.HasPrefix(rel, "testkit/") || strings.HasSuffix(path.Base(rel), "test")
}

// within tells whether rel (a path below shared/) is the group or package named by allowed.
func within(rel, allowed string) bool {
	return rel == allowed || strings.HasPrefix(rel, allowed+"/")
}

// Check returns every import of pkgs that breaks the rule, in pkgs' order.
func Check(pkgs []Package) []Violation {
	var out []Violation
	for _, p := range pkgs {
		group, rel, ok := Place(p.ImportPath)
		if !ok {
			continue
		}
		for _, imp := range p.Imports {
			if rule := checkImport(group, rel, imp); rule != "" {
				out = append(out, Violation{p.ImportPath, rule})
			}
		}
		if slices.Contains(DomainGroups, group) {
			out = append(out, checkDomain(p)...)
		}
	}
	return out
}

// checkImport returns the rule that one import of the package rel (in group) breaks, or "".
func checkImport(group, rel, imp string) string {
	igroup, irel, ok := Place(imp)
	if !ok {
		return ""
	}
	if group != "functions" && group != "cmd" && (igroup == "functions" || igroup == "cmd") {
		return fmt.Sprintf("imports %s: nothing under shared/ imports functions/ or cmd/", irel)
	}
	if isTestKit(rel) && igroup == "testkit" {
		return "" // a suite or reader beside what it tests may use the kits
	}
	if isTestKit(irel) && !isTestKit(rel) && group != "bench" {
		return fmt.Sprintf("imports the test kit %s: only tests import the test kits", irel)
	}
	if group == igroup && (group == "aws" || group == "local") && !isTestKit(rel) && !isTestKit(irel) {
		return fmt.Sprintf("imports %s: adapters never import each other", irel)
	}
	if group == "handler" && igroup == "handler" && !slices.Contains(Allowed["handler"], irel) {
		return fmt.Sprintf("imports %s: handlers never import each other", irel)
	}
	if !slices.ContainsFunc(Allowed[group], func(a string) bool { return within(irel, a) }) {
		return fmt.Sprintf("imports %s: %s/ may import only %s", irel, group, strings.Join(Allowed[group], ", "))
	}
	return ""
}

// checkDomain returns a violation for each piece of infrastructure a domain package links.
func checkDomain(p Package) []Violation {
	var out []Violation
	for _, d := range p.Deps {
		for _, infra := range Infrastructure {
			if strings.HasPrefix(d, infra) {
				out = append(out, Violation{p.ImportPath, fmt.Sprintf("links %s: the crawl domain links no AWS SDK, Lambda library or OTel SDK", d)})
				break
			}
		}
	}
	return out
}
