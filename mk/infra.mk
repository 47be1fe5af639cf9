# infra.mk: build the Lambda bootstraps and synthesize, test, deploy and destroy
# the CDK stack in infra/ (a Go module of its own; the CDK CLI comes from
# infra/package.json). Pass extra CDK arguments with CDK_ARGS, for example
#   make deploy CDK_ARGS='-c maxPages=5000 -c scheduleEnabled=true'

FUNCTIONS  := schedule fetch fetchslow parse render
# The render function is a container image (context render=true): its Dockerfile goes beside its
# bootstrap, the folder the image is built from.
BOOTSTRAPS := $(foreach f,$(FUNCTIONS),dist/$(f)/bootstrap) dist/render/Dockerfile
CDK_ARGS   ?=
# The root Makefile exports these too; repeated so this file stands alone.
CDK_ENV    := CDK_DISABLE_CLI_TELEMETRY=true JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20
# How a bootstrap is built; mk/lambda.mk builds the same for the host's architecture.
LAMBDA_BUILD_FLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w'
GO_LAMBDA_BUILD = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_BUILD_FLAGS)
# LocalStack defaults; any value already in the environment wins.
LOCALSTACK_ENV := AWS_ACCESS_KEY_ID=$${AWS_ACCESS_KEY_ID:-test} AWS_SECRET_ACCESS_KEY=$${AWS_SECRET_ACCESS_KEY:-test} \
	AWS_REGION=$${AWS_REGION:-us-east-1} AWS_DEFAULT_REGION=$${AWS_REGION:-us-east-1}

.PHONY: build test-infra synth cdk-bootstrap deploy destroy localstack-deploy localstack-destroy

build: $(addprefix build-,$(FUNCTIONS)) dist/render/Dockerfile ## build every Lambda bootstrap into dist/<fn>/bootstrap (linux/arm64)

build-%: ## build one Lambda bootstrap, e.g. make build-fetch
	$(GO_LAMBDA_BUILD) -o dist/$*/bootstrap ./functions/$*

# A missing bootstrap is built; an existing one is used as it is (`make build`
# rebuilds). synth and destroy need them only because the stack names them.
dist/%/bootstrap:
	$(GO_LAMBDA_BUILD) -o $@ ./functions/$*

dist/render/Dockerfile: functions/render/Dockerfile
	mkdir -p dist/render && cp $< $@

infra/node_modules:
	cd infra && npm ci --no-audit --no-fund

test-infra: ## test the CDK stack (synthesizes it once with the assertions module)
	cd infra && $(GO) test ./...

synth: $(BOOTSTRAPS) | infra/node_modules ## synthesize the CloudFormation template into infra/cdk.out
	cd infra && $(CDK_ENV) npx cdk synth -q --no-notices $(CDK_ARGS)

cdk-bootstrap: | infra/node_modules ## once per AWS account and region: create the CDK staging resources (cdk bootstrap)
	cd infra && $(CDK_ENV) npx cdk bootstrap --no-notices $(CDK_ARGS)

deploy: build | infra/node_modules ## build the functions and deploy the stack to the current AWS account
	cd infra && $(CDK_ENV) npx cdk deploy --no-notices $(CDK_ARGS)

destroy: $(BOOTSTRAPS) | infra/node_modules ## delete the stack (the bucket, table and logs are retained by default)
	cd infra && $(CDK_ENV) npx cdk destroy --no-notices $(CDK_ARGS)

# The LocalStack targets take the same context as deploy (cdk.json and CDK_ARGS, nothing more), so
# that LocalStack gets the stack that AWS would; localstack/compose_test.go holds them to it.
localstack-deploy: build | infra/node_modules ## deploy the stack to LocalStack on :4566 with deploy's context (bootstraps it first)
	cd infra && $(LOCALSTACK_ENV) $(CDK_ENV) npx cdklocal bootstrap --no-notices $(CDK_ARGS)
	cd infra && $(LOCALSTACK_ENV) $(CDK_ENV) npx cdklocal deploy --no-notices --require-approval never $(CDK_ARGS)

localstack-destroy: $(BOOTSTRAPS) | infra/node_modules ## delete the stack from LocalStack (its data goes with `make localstack-down`)
	cd infra && $(LOCALSTACK_ENV) $(CDK_ENV) npx cdklocal destroy --no-notices --force $(CDK_ARGS)
