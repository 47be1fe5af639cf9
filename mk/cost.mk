# Cost: meter a realistic, a wide, a single-host and a render crawl on the local AWS emulators (cmd/crawlcost).
# COST_FLAGS='-profiles realistic' runs one alone; the reports are also written to dist/cost.json.
COST_FLAGS ?=

.PHONY: cost

cost: ## meter a realistic crawl of 1,000 hosts, a 10,000-page crawl of 100 hosts, a single-host crawl and a rendered crawl on the AWS emulators; print units and $ per million pages, and write dist/cost.json
	$(GO) build -o dist/crawlcost ./cmd/crawlcost
	localstack/emulators.sh run dist/crawlcost -json dist/cost.json $(COST_FLAGS)
