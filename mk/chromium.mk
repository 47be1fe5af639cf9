# Chromium, the browser of the render step (shared/crawl/web/render), from Debian's own package:
# `apt-get install -y --no-install-recommends chromium`, through sudo when not root. Nothing is
# installed when a chromium (or chromium-browser, google-chrome, or $CRAWL_CHROMIUM) already runs.
# `make test` installs it first and sets CRAWL_TEST_REQUIRE_CHROMIUM=1, so that a render test fails
# instead of skipping when the browser is missing (docs/render.md).
RENDER_BENCH_RUNS ?= 5
RENDER_BENCH_TIME ?= 20x

.PHONY: chromium-deps bench-render

chromium-deps: ## install Debian's chromium for the render tests (apt-get, sudo when not root) unless one is on PATH or in CRAWL_CHROMIUM
	@if [ -n "$$CRAWL_CHROMIUM" ] && [ -x "$$CRAWL_CHROMIUM" ]; then exit 0; fi; \
	for b in chromium chromium-browser google-chrome; do command -v $$b >/dev/null && exit 0; done; \
	command -v apt-get >/dev/null || { echo "chromium-deps: no chromium on PATH and no apt-get (not Debian): install Chromium and put it on PATH or in CRAWL_CHROMIUM"; exit 1; }; \
	sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	echo "chromium-deps: $$sudo apt-get install -y --no-install-recommends chromium"; \
	$$sudo apt-get install -y --no-install-recommends chromium >/dev/null || \
		{ $$sudo apt-get update -q >/dev/null && $$sudo apt-get install -y --no-install-recommends chromium >/dev/null; } || \
		{ echo "chromium-deps: apt-get install chromium failed"; exit 1; }; \
	"$$(command -v chromium)" --version 2>/dev/null

test-unit: chromium-deps
test-unit: export CRAWL_TEST_REQUIRE_CHROMIUM = 1

bench-render: chromium-deps ## the render benchmark (BenchmarkRender: pages/s and the browser's memory on the JS site, 1 and 4 tabs), RENDER_BENCH_RUNS times
	CRAWL_TEST_REQUIRE_CHROMIUM=1 $(GO) test -run '^$$' -bench '^BenchmarkRender$$' -benchtime $(RENDER_BENCH_TIME) \
		-count $(RENDER_BENCH_RUNS) ./shared/crawl/web/render/

bench-go: bench-render
