# Benchmark: this crawler against Colly on a generated loopback site (cmd/crawlbench).
BENCH_PAGES ?= 10000
BENCH_SMALL_PAGES ?= 2000
BENCH_LINKS ?= 20
BENCH_PAGE_BYTES ?= 20000
BENCH_CONCURRENCY ?= 32
BENCH_RUNS ?= 3
BENCH_FLAGS ?=
BENCH_PROFILE_DIR ?= .state/bench-profile

.PHONY: bench bench-profile bench-go

bench: ## crawl a BENCH_PAGES-page loopback site with ours and Colly, BENCH_RUNS times; print pages/s, CPU, peak RSS and medians
	$(GO) build -o dist/crawlbench ./cmd/crawlbench
	dist/crawlbench -pages $(BENCH_PAGES) -small-pages $(BENCH_SMALL_PAGES) -links $(BENCH_LINKS) \
		-page-bytes $(BENCH_PAGE_BYTES) -concurrency $(BENCH_CONCURRENCY) -runs $(BENCH_RUNS) $(BENCH_FLAGS)

bench-profile: ## one crawl of ours with CPU and allocation profiles in BENCH_PROFILE_DIR (go tool pprof to read them)
	$(GO) build -o dist/crawlbench ./cmd/crawlbench
	mkdir -p $(BENCH_PROFILE_DIR)
	dist/crawlbench -crawlers ours -runs 1 -small-pages 0 -pages $(BENCH_PAGES) -links $(BENCH_LINKS) \
		-page-bytes $(BENCH_PAGE_BYTES) -concurrency $(BENCH_CONCURRENCY) -profile $(BENCH_PROFILE_DIR)
	@echo "go tool pprof -top dist/crawlbench $(BENCH_PROFILE_DIR)/ours-$(BENCH_PAGES)-1.cpu.pprof"

bench-go: ## the in-process Go benchmarks of the crawl at small size (go test -bench)
	$(GO) test -run '^$$' -bench . -benchtime 3x ./cmd/crawlbench
