# Fuzzing: every fuzz target of the repository, each for a bounded time.
# Add a target with one more line in the fuzz recipe; keep the list explicit.
FUZZTIME ?= 10s

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each (default 10s), e.g. make fuzz FUZZTIME=1m
	$(GO) test -run '^$$' -fuzz '^FuzzNormalize$$' -fuzztime $(FUZZTIME) ./shared/crawl/urlnorm
	$(GO) test -run '^$$' -fuzz '^FuzzExtract$$' -fuzztime $(FUZZTIME) ./shared/crawl/web/links
	$(GO) test -run '^$$' -fuzz '^FuzzScan$$' -fuzztime $(FUZZTIME) ./shared/crawl/seeds
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./shared/crawl/message
	$(GO) test -run '^$$' -fuzz '^FuzzCheckURL$$' -fuzztime $(FUZZTIME) ./shared/crawl/web/netguard
	$(GO) test -run '^$$' -fuzz '^FuzzRetryAfter$$' -fuzztime $(FUZZTIME) ./shared/crawl/retry
