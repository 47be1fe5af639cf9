# Local invokes: run one handler once on a sample event from events/, like `sam local invoke`.
# make invoke FN=fetch EVENT=events/sqs-fetch.json                       (embedded, in .state/invoke)
# make invoke FN=schedule EVENT=events/sqs-links.json INVOKE_FLAGS="--backend aws"  (the AWS endpoint in the environment)
# As for every crawl command, a flag wins over its CRAWL_* variable, which wins over the default.

FN ?= schedule
EVENT ?= events/s3-test-event.json
INVOKE_FLAGS ?=
INVOKE_STATE ?= .state/invoke

.PHONY: invoke

invoke: ## run handler FN (schedule|fetch|parse) once on EVENT and print its response; embedded (no AWS) unless INVOKE_FLAGS="--backend aws"
	CRAWL_STATE=$${CRAWL_STATE:-$(INVOKE_STATE)} $(GO) run ./cmd/crawl invoke $(INVOKE_FLAGS) $(FN) $(EVENT)
