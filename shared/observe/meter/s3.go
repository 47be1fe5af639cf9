package meter

import (
	"strings"

	"github.com/crawlstack/crawlstack/shared/crawl/cost"
)

// s3Units returns the units of one answered S3 call. S3 bills an answer with a 2xx, 3xx or 4xx
// status and not one with a 5xx status ("Billing for Amazon S3 error responses" in the S3 user
// guide), and it prices requests by class:
//   - class A, "PUT, COPY, POST, LIST": Put*, Copy*, Create*, Upload*, Complete*, List*,
//     RestoreObject, and DeleteObjects (a POST);
//   - free, "DELETE and CANCEL": the other Delete* calls and AbortMultipartUpload;
//   - class B, "GET, SELECT, and all other requests": everything else (GetObject, HeadObject ...).
func s3Units(op string, status int) cost.Units {
	if status >= 500 {
		return cost.Units{}
	}
	switch s3Class(op) {
	case classA:
		return cost.Units{S3ClassA: 1}
	case classB:
		return cost.Units{S3ClassB: 1}
	}
	return cost.Units{}
}

// s3RequestClass is the price class of an S3 request.
type s3RequestClass int

// The price classes of S3 requests.
const (
	classFree s3RequestClass = iota
	classA
	classB
)

// s3Class returns the price class of an S3 operation.
func s3Class(op string) s3RequestClass {
	switch op {
	case "DeleteObjects", "RestoreObject":
		return classA
	case "AbortMultipartUpload":
		return classFree
	}
	for _, p := range []string{"Put", "Copy", "Create", "Upload", "Complete", "List"} {
		if strings.HasPrefix(op, p) {
			return classA
		}
	}
	if strings.HasPrefix(op, "Delete") {
		return classFree
	}
	return classB
}
