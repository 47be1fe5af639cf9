# Cost: meter a wide and a single-host crawl on the local AWS emulators (cmd/crawlcost).
COST_FLAGS ?=

.PHONY: cost

cost: ## meter a 10,000-page crawl of 100 hosts and a single-host crawl on the AWS emulators; print units and $ per million pages
	$(GO) build -o dist/crawlcost ./cmd/crawlcost
	localstack/emulators.sh run dist/crawlcost $(COST_FLAGS)
