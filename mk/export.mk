# csv-parse, the independent reader that the tests check the CSV files of `crawl export` with
# (shared/ops/export/exporttest). `make test` (and its parts that export) install it first.

CSVPARSE_DIR := .cache/csvparse
CSVPARSE_LOCK := shared/ops/export/exporttest/package.json shared/ops/export/exporttest/package-lock.json

.PHONY: csvparse-deps

csvparse-deps: $(CSVPARSE_DIR)/node_modules/csv-parse/package.json ## install csv-parse (the tests' CSV reader) into .cache/csvparse

$(CSVPARSE_DIR)/node_modules/csv-parse/package.json: $(CSVPARSE_LOCK)
	@command -v node >/dev/null || { echo "node not found: the export tests read the files with csv-parse on Node 18+"; exit 1; }
	mkdir -p $(CSVPARSE_DIR)
	cp $(CSVPARSE_LOCK) $(CSVPARSE_DIR)/
	npm ci --silent --no-audit --no-fund --prefix $(CSVPARSE_DIR)
	touch $@

test-unit test-emulators test-integration: csvparse-deps
