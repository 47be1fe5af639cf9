# crawlstack: a serverless web crawler in Go for AWS.
# The two commands a new machine needs: `make run` (crawl a demo site on the embedded backend)
# and `make test` (every test). Topic targets live in mk/*.mk.
SHELL := bash
.DEFAULT_GOAL := help
GO ?= go
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true

.PHONY: help
help: ## list the targets
	@grep -hE '^[a-zA-Z_%-]+:.*## ' $(MAKEFILE_LIST) | sort | awk -F':.*## ' '{printf "  %-20s %s\n", $$1, $$2}'

include $(sort $(wildcard mk/*.mk))
