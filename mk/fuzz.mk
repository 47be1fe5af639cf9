# Fuzzing: every fuzz target of the repository, each for a bounded time.
# Add a target with one more line in the fuzz recipe; keep the list explicit.
FUZZTIME ?= 10s

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each (default 10s), e.g. make fuzz FUZZTIME=1m
	$(GO) test -run '^$$' -fuzz '^FuzzNormalize$$' -fuzztime $(FUZZTIME) ./shared/urlnorm
	$(GO) test -run '^$$' -fuzz '^FuzzExtract$$' -fuzztime $(FUZZTIME) ./shared/links
	$(GO) test -run '^$$' -fuzz '^FuzzScan$$' -fuzztime $(FUZZTIME) ./shared/seeds
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./shared/message
	$(GO) test -run '^$$' -fuzz '^FuzzCheckURL$$' -fuzztime $(FUZZTIME) ./shared/netguard
	$(GO) test -run '^$$' -fuzz '^FuzzRetryAfter$$' -fuzztime $(FUZZTIME) ./shared/retry
