// Package stacke2e proves the deployed stack locally: the synthesized CloudFormation template
// (cdk synth), deployed onto the local AWS emulators by shared/testkit/stackrun, with the three real
// function binaries (built as `make deploy` builds them, for the host's architecture) running
// under the Lambda Runtime Interface Emulator (shared/testkit/lambdarie), fed from their queues by the
// template's event source mappings, and started by an S3 notification of a seed file.
//
// The package has tests only. `make test-emulators` (part of `make test`) builds what they need
// and names it in CRAWL_TEST_STACK_TEMPLATE, CRAWL_TEST_LAMBDA_DIST and CRAWL_TEST_RIE, and the
// template synthesized with tracing on in CRAWL_TEST_STACK_TEMPLATE_TRACING.
package stacke2e
