# DuckDB, which reads the crawl records as the stack's Athena table declares them (Athena cannot run
# here): shared/testkit/athenaduck. `make test` (and its parts that query records) install it first.

DUCKDB_DIR := .cache/duckdb
DUCKDB_LOCK := shared/testkit/athenaduck/package.json shared/testkit/athenaduck/package-lock.json

.PHONY: duckdb-deps

duckdb-deps: $(DUCKDB_DIR)/node_modules/@duckdb/node-api/package.json ## install DuckDB (the tests' reader of the records as Athena's table) into .cache/duckdb

$(DUCKDB_DIR)/node_modules/@duckdb/node-api/package.json: $(DUCKDB_LOCK)
	@command -v node >/dev/null || { echo "node not found: the records tests query them with DuckDB on Node 20+"; exit 1; }
	mkdir -p $(DUCKDB_DIR)
	cp $(DUCKDB_LOCK) $(DUCKDB_DIR)/
	npm ci --silent --no-audit --no-fund --prefix $(DUCKDB_DIR)
	touch $@

test-unit test-emulators test-integration: duckdb-deps
