# warcio.js, the independent reader that the tests check every WARC file and CDXJ index with
# (shared/crawl/warcfile/warctest). `make test` (and its parts that read WARC files) install it first.

WARCIO_DIR := .cache/warcio
WARCIO_LOCK := shared/crawl/warcfile/warctest/package.json shared/crawl/warcfile/warctest/package-lock.json

.PHONY: warcio-deps

warcio-deps: $(WARCIO_DIR)/node_modules/warcio/package.json ## install warcio.js (the tests' WARC reader) into .cache/warcio

$(WARCIO_DIR)/node_modules/warcio/package.json: $(WARCIO_LOCK)
	@command -v node >/dev/null || { echo "node not found: the WARC tests read the files with warcio.js on Node 18+"; exit 1; }
	mkdir -p $(WARCIO_DIR)
	cp $(WARCIO_LOCK) $(WARCIO_DIR)/
	npm ci --silent --no-audit --no-fund --prefix $(WARCIO_DIR)
	touch $@

test-unit test-emulators test-integration: warcio-deps
