# AWS adapters: integration tests against LocalStack or the local emulators.

# Packages with TestIntegration* tests (the infra module, caches and node_modules excluded).
INTEGRATION_PKGS = $(shell grep -rlE --include='*_test.go' --exclude-dir=node_modules --exclude-dir=.cache \
	--exclude-dir=infra --exclude-dir=cdk.out --exclude-dir=.git '^func TestIntegration' . 2>/dev/null \
	| xargs -r -n1 dirname | sort -u)
LOCALSTACK_URL ?= http://localhost:4566
LOCALSTACK_COMPOSE = docker compose -f localstack/docker-compose.yml

.PHONY: test-integration emulators-up emulators-down test-emulators localstack-up localstack-down

test-integration: ## integration tests against the endpoint in the environment (default: LocalStack on :4566)
	@if [ -z "$$AWS_ENDPOINT_URL$$AWS_ENDPOINT_URL_SQS$$AWS_ENDPOINT_URL_DYNAMODB$$AWS_ENDPOINT_URL_S3" ]; then \
		echo "no AWS endpoint set: using LocalStack at $(LOCALSTACK_URL)"; \
		export AWS_ENDPOINT_URL=$(LOCALSTACK_URL) CRAWL_TEST_LOCALSTACK=1; \
	fi; \
	export AWS_REGION=$${AWS_REGION:-us-east-1} AWS_ACCESS_KEY_ID=$${AWS_ACCESS_KEY_ID:-test} \
		AWS_SECRET_ACCESS_KEY=$${AWS_SECRET_ACCESS_KEY:-test}; \
	$(GO) test -race -count=1 -run Integration $(INTEGRATION_PKGS)

emulators-up: ## install and start the no-Docker AWS emulators (DynamoDB Local, fauxqs, gofakes3)
	@localstack/emulators.sh install
	@localstack/emulators.sh start
	@echo "now: source .cache/emulators/env"

emulators-down: ## stop the no-Docker AWS emulators
	@localstack/emulators.sh stop

test-emulators: lambda-test-deps ## start the emulators, run the integration tests against them, the deployed stack's among them (a skip not in localstack/allowed-skips.txt fails), stop them
	@$(LAMBDA_TEST_ENV) localstack/emulators.sh test $(INTEGRATION_PKGS)

localstack-up: ## start LocalStack in Docker (localstack/docker-compose.yml) on :4566
	$(LOCALSTACK_COMPOSE) up -d --wait

localstack-down: ## stop LocalStack and drop its data
	$(LOCALSTACK_COMPOSE) down -v
