# The main job and the tests: `make run` and `make test` are the README's two commands.

SEEDS ?=
RUN_FLAGS ?=
STATE ?= .state/run

.PHONY: run test vet test-unit crawl

run: ## crawl the demo site this command serves on loopback; SEEDS=file crawls your seeds instead
ifeq ($(strip $(SEEDS)),)
	$(GO) run ./cmd/crawl demo $(if $(RUN_FLAGS),-- $(RUN_FLAGS))
else
	$(GO) run ./cmd/crawl run --state $(STATE) $(RUN_FLAGS) $(SEEDS)
endif

# The commit goes into the binary for crawl --version: Go stamps it itself (-buildvcs) in a clone,
# and the -X fallback covers checkouts it does not read (a git worktree).
CRAWL_BIN ?= dist/crawl
crawl: ## build the crawl command into dist/crawl (CRAWL_BIN=path elsewhere)
	$(GO) build -buildvcs=auto -ldflags "-X github.com/crawlstack/crawlstack/shared/app/cli.commit=$$(git rev-parse HEAD 2>/dev/null)" -o $(CRAWL_BIN) ./cmd/crawl

test: vet test-unit test-emulators test-infra ## every test: vet, unit and end-to-end, integration on the AWS emulators, CDK stack

vet: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go') 2>/dev/null); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

test-unit: ## unit and end-to-end tests with the race detector (integration tests skip without an AWS endpoint)
	$(GO) test -race -count=1 ./...
