# Benchmark: this crawler against Colly, a ceiling client and GNU wget on generated loopback sites
# (cmd/crawlbench). Each site is PAGES or PAGES@LATENCY (the time the site waits before each
# response). The default set has the sizes the targets are measured at (docs/bench.md): 5,000 pages
# at 50 and at 200 ms, where the three round trips every crawl starts with (robots.txt, the root,
# its links) weigh 2% or less; about ten minutes on a 2-core machine. BENCH_QUICK=1 crawls smaller
# sites (2,000 pages at 50 ms, 1,000 at 200 ms), about four. make bench-scale: 100,000 pages.
BENCH_SITES ?= 10000,2000,5000@50ms,5000@200ms
BENCH_QUICK_SITES ?= 10000,2000,2000@50ms,1000@200ms
ifeq ($(BENCH_QUICK),1)
BENCH_SITES := $(BENCH_QUICK_SITES)
endif
BENCH_CRAWLERS ?= ours,colly,ceiling,wget
# BENCH_PAGES is the site of make bench-profile.
BENCH_PAGES ?= 10000
BENCH_LINKS ?= 20
BENCH_PAGE_BYTES ?= 20000
BENCH_CONCURRENCY ?= 32
BENCH_RUNS ?= 3
BENCH_FLAGS ?=
BENCH_PROFILE_DIR ?= .state/bench-profile
BENCH_SCALE_PAGES ?= 100000
BENCH_SCALE_CRAWLERS ?= ours
BENCH_SCALE_RUNS ?= 1
# GNU wget from Debian's packages, unpacked into .cache (no root needed: apt-get download, dpkg -x).
WGET_DIR := .cache/wget
WGET := .cache/bin/wget

.PHONY: bench bench-profile bench-go bench-scale bench-wget tally-scale

bench: bench-wget ## crawl the BENCH_SITES with ours, Colly, the ceiling client and wget, BENCH_RUNS times interleaved; print pages/s, CPU, peak RSS, repeats, fetches in flight, medians
	$(GO) build -o dist/crawlbench ./cmd/crawlbench
	dist/crawlbench -sites $(BENCH_SITES) -crawlers $(BENCH_CRAWLERS) -links $(BENCH_LINKS) \
		-page-bytes $(BENCH_PAGE_BYTES) -concurrency $(BENCH_CONCURRENCY) -runs $(BENCH_RUNS) \
		$(if $(wildcard $(WGET)),-wget $(WGET)) $(BENCH_FLAGS)

bench-scale: ## crawl 10,000 then BENCH_SCALE_PAGES pages with ours, BENCH_SCALE_RUNS times (pages/s and peak RSS at scale)
	$(GO) build -o dist/crawlbench ./cmd/crawlbench
	dist/crawlbench -sites 10000,$(BENCH_SCALE_PAGES) -crawlers $(BENCH_SCALE_CRAWLERS) -runs $(BENCH_SCALE_RUNS) -links $(BENCH_LINKS) \
		-page-bytes $(BENCH_PAGE_BYTES) -concurrency $(BENCH_CONCURRENCY) $(BENCH_FLAGS)

# Never fails the bench: without wget (no apt lists, a missing library) the bench skips it and says why.
bench-wget: ## install GNU wget from Debian's packages into .cache/bin for make bench
	@if [ -x $(WGET) ] && $(WGET) --version >/dev/null 2>&1; then exit 0; fi; \
	rm -rf $(WGET_DIR) $(WGET); mkdir -p $(WGET_DIR)/deb $(dir $(WGET)); \
	if ! command -v apt-get >/dev/null || ! command -v dpkg >/dev/null; then \
		echo "bench-wget: apt-get and dpkg not found (not Debian): the bench skips wget"; exit 0; fi; \
	if ! (cd $(WGET_DIR)/deb && apt-get download wget >/dev/null 2>&1); then \
		echo "bench-wget: apt-get download wget failed (run apt-get update first?): the bench skips wget"; exit 0; fi; \
	dpkg -x $(WGET_DIR)/deb/wget_*.deb $(WGET_DIR)/root && ln -sf $(abspath $(WGET_DIR))/root/usr/bin/wget $(WGET); \
	if ! $(WGET) --version >/dev/null 2>&1; then \
		echo "bench-wget: the unpacked wget does not run (its libraries need apt-get install wget, as root): the bench skips wget"; \
		$(WGET) --version 2>&1 | head -3; rm -f $(WGET); exit 0; fi; \
	$(WGET) --version | head -1

bench-profile: ## one crawl of ours with CPU and allocation profiles in BENCH_PROFILE_DIR (go tool pprof to read them)
	$(GO) build -o dist/crawlbench ./cmd/crawlbench
	mkdir -p $(BENCH_PROFILE_DIR)
	dist/crawlbench -crawlers ours -runs 1 -sites $(BENCH_PAGES) -links $(BENCH_LINKS) \
		-page-bytes $(BENCH_PAGE_BYTES) -concurrency $(BENCH_CONCURRENCY) -profile $(BENCH_PROFILE_DIR)
	@echo "go tool pprof -top dist/crawlbench $(BENCH_PROFILE_DIR)/ours-1-1.cpu.pprof"

bench-go: ## the in-process Go benchmarks of the crawl at small size (go test -bench)
	$(GO) test -run '^$$' -bench . -benchtime 3x ./cmd/crawlbench

# The incremental recrawl (cmd/crawlrecrawl): a full crawl of the 10,000-page bench site on the AWS
# emulators, then a recrawl after one page in ten changed; requests, bytes and cost side by side.
RECRAWL_FLAGS ?=
.PHONY: recrawl-bench
recrawl-bench: ## crawl the 10,000-page bench site on the AWS emulators, change 10% of it, recrawl; print requests, bytes and cost of both
	$(GO) build -o dist/crawlrecrawl ./cmd/crawlrecrawl
	localstack/emulators.sh run dist/crawlrecrawl $(RECRAWL_FLAGS)

# make tally-scale: a crawl's items as a real crawl writes them (TALLY_URLS URL items, their groups,
# parse marks and Links names) bulk-loaded into DynamoDB Local, then tallied as the drain checks do:
# in steps of TALLY_BUDGET (finish.DefaultTallyBudget), each in a process of its own under the
# schedule function's memory limit (GOMEMLIMIT from its 256 MB), each going on from the state the
# one before saved. Every step's peak RSS and wall time must fit 256 MB and, with a renewal's 20 s,
# 60 s (docs/bench.md). The load takes most of the time.
TALLY_URLS ?= 1000000
TALLY_BUDGET ?= 20s
tally-scale: ## load TALLY_URLS URL items into DynamoDB Local and tally them in steps, each in a child process: per step peak RSS and time against schedule's 256 MB and 60 s
	CRAWL_TALLY_URLS=$(TALLY_URLS) CRAWL_TALLY_BUDGET=$(TALLY_BUDGET) localstack/emulators.sh run $(GO) test -count=1 -timeout 90m \
		-run '^TestIntegrationTallyAtScale$$' -v ./shared/crawl/crawlstate/
