package cost

import "time"

// RenderBatch is what one render invocation adds to a crawl's bill, besides what the pages cost
// without rendering: the model of the render step (shared/handler/renderer) that docs/cost.md
// prices, and that the ledger meters call by call on a deployed stack.
//
// A batch of pages messages (each a fetch batch's part of a WARC file: its pages, of which
// rendered were rendered) took took in a function of memoryMB. It costs the invocation and its
// GB-seconds; the render queue's send (by fetch, in place of the send to parse, so none extra),
// its receives and deletes (BatchRequests), and the send to parse of each message (one
// SendMessageBatch a batch); a GET of each page it reads back (one per page that may render: an
// HTML 2xx page); a done-mark read per message (an eventually consistent GetItem); and, when any
// page rendered, one PUT of its WARC file of conversion records, and one more with index (its
// CDXJ index beside it).
func RenderBatch(messages, read, rendered int, took time.Duration, memoryMB int, index bool) Units {
	u := Units{
		LambdaRequests:    1,
		LambdaGBSeconds:   LambdaGBSeconds(took, memoryMB),
		SQSRequests:       BatchRequests(messages, messages, false) + 1,
		S3ClassB:          int64(read),
		DynamoDBReadUnits: 0.5 * float64(messages),
	}
	if rendered > 0 {
		u.S3ClassA = 1
		if index {
			u.S3ClassA = 2
		}
	}
	return u
}
