# lambda.mk: the real function binaries under the Lambda Runtime Interface Emulator.
# The bootstraps are built as `make deploy` builds them (LAMBDA_BUILD_FLAGS), for the host's
# architecture, into .cache/lambda/dist; the stack is synthesized from them with cdk synth, as
# `make synth` does, into .cache/lambda/cdk.out. shared/testkit/stacke2e (run by test-emulators) deploys
# that template onto the local emulators and runs the bootstraps under aws-lambda-rie;
# `make coldstart` measures their init.

RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
RIE         := .cache/bin/aws-lambda-rie
LAMBDA_DIR  := .cache/lambda
LAMBDA_DIST := $(LAMBDA_DIR)/dist
LAMBDA_TEMPLATE := $(LAMBDA_DIR)/cdk.out/Crawlstack.template.json
# The context of the template the tests run: the stack's defaults, with the loopback network
# allowed (the test site is on 127.0.0.1) and a host rate that does not make a 30-page crawl
# take 30 s. Everything else is what `make deploy` deploys.
LAMBDA_TEST_CONTEXT ?= -c allowNet=127.0.0.0/8 -c hostRps=100
# The same with the stack's options on, for the tests of them: tracing (a collector layer, so X-Ray
# as the target; the layer is only named, since the test's OTLP receiver plays the collector) and a
# record stream (a queue of the user's, in the emulator's account, which the test creates).
LAMBDA_TRACING_TEMPLATE := $(LAMBDA_DIR)/cdk.out-tracing/Crawlstack.template.json
LAMBDA_TRACING_CONTEXT := -c otelCollectorLayerArn=arn:aws:lambda:us-east-1:123456789012:layer:test-collector:1 \
	-c recordStreamQueueArn=arn:aws:sqs:us-east-1:000000000000:crawl-test-record-stream
LAMBDA_HOST_BOOTSTRAPS := $(foreach f,$(FUNCTIONS),$(LAMBDA_DIST)/$(f)/bootstrap)
INFRA_SOURCES := $(shell find infra -name '*.go' -not -path '*/node_modules/*' 2>/dev/null) infra/cdk.json infra/go.mod
COLDSTART_RUNS ?= 5

.PHONY: lambda-host lambda-test-deps coldstart FORCE

$(RIE):
	GOBIN=$(abspath $(dir $(RIE))) $(GO) install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

# Rebuilt on every run: go build does nothing when no source changed.
$(LAMBDA_DIST)/%/bootstrap: FORCE
	CGO_ENABLED=0 $(GO) build $(LAMBDA_BUILD_FLAGS) -o $@ ./functions/$*

lambda-host: $(LAMBDA_HOST_BOOTSTRAPS) ## build the Lambda bootstraps for the host's architecture into .cache/lambda/dist

$(LAMBDA_TEMPLATE): $(INFRA_SOURCES) mk/lambda.mk | infra/node_modules $(LAMBDA_HOST_BOOTSTRAPS)
	cd infra && $(CDK_ENV) npx cdk synth -q --no-notices -o ../$(LAMBDA_DIR)/cdk.out \
		-c distDir=../$(LAMBDA_DIST) $(LAMBDA_TEST_CONTEXT)

$(LAMBDA_TRACING_TEMPLATE): $(INFRA_SOURCES) $(wildcard infra/crawlstack/collector/*.yaml) mk/lambda.mk | infra/node_modules $(LAMBDA_HOST_BOOTSTRAPS)
	cd infra && $(CDK_ENV) npx cdk synth -q --no-notices -o ../$(LAMBDA_DIR)/cdk.out-tracing \
		-c distDir=../$(LAMBDA_DIST) $(LAMBDA_TEST_CONTEXT) $(LAMBDA_TRACING_CONTEXT)

lambda-test-deps: $(RIE) lambda-host $(LAMBDA_TEMPLATE) $(LAMBDA_TRACING_TEMPLATE)

# The variables shared/testkit/stacke2e reads.
LAMBDA_TEST_ENV = CRAWL_TEST_STACK_TEMPLATE=$(abspath $(LAMBDA_TEMPLATE)) \
	CRAWL_TEST_STACK_TEMPLATE_TRACING=$(abspath $(LAMBDA_TRACING_TEMPLATE)) \
	CRAWL_TEST_LAMBDA_DIST=$(abspath $(LAMBDA_DIST)) CRAWL_TEST_RIE=$(abspath $(RIE))

coldstart: lambda-test-deps ## each function's init duration under aws-lambda-rie (median of COLDSTART_RUNS cold starts)
	$(GO) run ./cmd/coldstart -template $(LAMBDA_TEMPLATE) -dist $(LAMBDA_DIST) -rie $(RIE) -runs $(COLDSTART_RUNS)
