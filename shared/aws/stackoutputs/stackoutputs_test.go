package stackoutputs_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/crawlstack/crawlstack/shared/aws/stackoutputs"
	"github.com/crawlstack/crawlstack/shared/testkit/fakecfn"
)

func client(url string) *cloudformation.Client {
	return cloudformation.NewFromConfig(aws.Config{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}},
		func(o *cloudformation.Options) { o.BaseEndpoint = aws.String(url) })
}

func full() map[string]string {
	outs := map[string]string{}
	for k := range stackoutputs.Vars {
		outs[k] = "value-of-" + k
	}
	outs["ResultsDatabaseName"] = "not read"
	return outs
}

func TestReadGivesTheOutputsAsTheCLIsVariables(t *testing.T) {
	srv := fakecfn.Start(t, map[string]map[string]string{"Crawlstack": full()})
	vars, err := stackoutputs.Read(t.Context(), client(srv.URL), "Crawlstack")
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) != len(stackoutputs.Vars) {
		t.Errorf("vars %v, want the %d the CLI reads", vars, len(stackoutputs.Vars))
	}
	if vars["CRAWL_TABLE"] != "value-of-TableName" || vars["FETCH_DLQ_URL"] != "value-of-FetchDLQUrl" {
		t.Errorf("vars %v", vars)
	}
	// A stack with the render step has its queues too: read when there, never required.
	outs := full()
	outs["RenderQueueUrl"], outs["RenderDLQUrl"] = "render-queue", "render-dlq"
	srv = fakecfn.Start(t, map[string]map[string]string{"Crawlstack": outs})
	vars, err = stackoutputs.Read(t.Context(), client(srv.URL), "Crawlstack")
	if err != nil || vars["RENDER_QUEUE_URL"] != "render-queue" || vars["RENDER_DLQ_URL"] != "render-dlq" {
		t.Errorf("a stack with the render step: vars %v, %v", vars, err)
	}
}

func TestAStackThatIsNotThereOrNotACrawlersIsSaid(t *testing.T) {
	partial := full()
	delete(partial, "FetchQueueUrl")
	srv := fakecfn.Start(t, map[string]map[string]string{"Other": partial})
	_, err := stackoutputs.Read(t.Context(), client(srv.URL), "Missing")
	if !errors.Is(err, stackoutputs.ErrNoStack) || !strings.Contains(err.Error(), "Missing") {
		t.Errorf("a missing stack: %v, want ErrNoStack naming it", err)
	}
	_, err = stackoutputs.Read(t.Context(), client(srv.URL), "Other")
	if err == nil || !strings.Contains(err.Error(), "no output FetchQueueUrl") {
		t.Errorf("a stack without FetchQueueUrl: %v, want the output named", err)
	}
}
