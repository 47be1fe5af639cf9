// Package importrule holds the import rule between shared/'s groups, and the test that holds the
// tree to it. The folders tell what the crawler is:
//
//	port/     the ports: queue, table, blob (with their conformance suites) and turn
//	crawl/    the crawl domain: rules, state, formats, the cost model, the bucket layout;
//	          crawl/web/ is its hostile-web part (HTTP client, SSRF guard, robots.txt, HTML)
//	handler/  the three handlers (scheduler, fetcher, parser) and their Lambda glue (sqsbatch,
//	          quarantine)
//	aws/      the AWS adapters, one per service
//	local/    the embedded adapters and the local runner (`crawl run`)
//	observe/  traces, metrics, the meter on the SDK clients and the crawl's bill
//	ops/      admin operations on stored crawls: purge, indexes, export
//	app/      wiring (pipeline, awsports) and the `crawl` command
//	demo/     demo sites served on loopback
//	testkit/  test kits and the emulation of the deployed stack
//	bench/    benchmarks and cost runs
//
// The rule, which TestTreeKeepsTheImportRule holds over `go list`:
//
//   - An arrow only runs down: a group imports only the groups listed for it in Allowed.
//   - The crawl domain (port/ and crawl/) links no AWS SDK, no Lambda library and no OpenTelemetry
//     SDK or exporter, not even through another package; the OTel API is fine.
//   - Adapters never import each other: a package of aws/ or local/ imports no other package of its
//     own group. Handlers never import each other: a package of handler/ imports only its glue.
//   - The local runner (local/localrun) builds its handlers' batches with the handlers' SQS glue
//     (handler/sqsbatch, Event), the one builder of the event Lambda delivers, which the slow
//     lane's fetcher uses too for the messages it takes from its own queue.
//   - Only tests import the test kits (testkit/ and the *test suites beside the ports and formats);
//     testkit/ and bench/ are the exceptions, being test and measuring code themselves.
//   - Nothing under shared/ imports functions/ or cmd/.
package importrule
