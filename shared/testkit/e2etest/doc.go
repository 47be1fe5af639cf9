// Package e2etest is the end-to-end test harness shared by the crawler's embedded tests
// (shared/app/cli) and its AWS tests (shared/testkit/awse2e): a loopback demo site that records when each
// page was asked for, a crawl driven by the local runner over any backend, the checks of DESIGN
// invariant 1 (nothing lost: every URL terminal, every page fetched once and recorded, every
// dead-letter queue empty), the faults the tests inject (duplicate deliveries, a crash after
// some number of writes), and the scenarios both backends must pass.
//
// It imports no backend: shared/app/cli's own tests use it, so the test packages hand it their
// adapters and their `crawl run` steps (StartCrawl, NewRunner) through Backend.
package e2etest
