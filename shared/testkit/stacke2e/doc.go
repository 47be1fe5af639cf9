// Package stacke2e proves the deployed stack locally: the synthesized CloudFormation template
// (cdk synth), deployed onto the local AWS emulators by shared/testkit/stackrun, with the three real
// function binaries (built as `make deploy` builds them, for the host's architecture) running
// under the Lambda Runtime Interface Emulator (shared/testkit/lambdarie), fed from their queues by the
// template's event source mappings, and started by an S3 notification of a seed file.
//
// The package has tests only. `make test-emulators` (part of `make test`) builds what they need
// and names it in CRAWL_TEST_STACK_TEMPLATE, CRAWL_TEST_LAMBDA_DIST and CRAWL_TEST_RIE, and the
// template synthesized with the stack's options on (tracing to a collector layer, a record stream
// queue) in CRAWL_TEST_STACK_TEMPLATE_TRACING. A queue the template imports rather than creates
// (the record stream, a queue of the user's) is created on the emulator by the harness.
package stacke2e
