# Local invokes: run one handler once on a sample event from events/, like `sam local invoke`.
# make invoke FN=fetch EVENT=events/sqs-fetch.json                       (the AWS endpoint in the environment)
# make invoke FN=schedule EVENT=events/sqs-links.json INVOKE_FLAGS="--backend embedded --state .state/invoke"

FN ?= schedule
EVENT ?= events/s3-test-event.json
INVOKE_FLAGS ?=

.PHONY: invoke

invoke: ## run handler FN (schedule|fetch|parse) once on EVENT and print its response; INVOKE_FLAGS="--backend embedded" needs no AWS
	$(GO) run ./cmd/crawl invoke $(INVOKE_FLAGS) $(FN) $(EVENT)
