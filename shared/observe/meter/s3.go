package meter

import "strings"

// s3Units returns the units of one answered S3 call. S3 bills an answer with a 2xx, 3xx or 4xx
// status and not one with a 5xx status ("Billing for Amazon S3 error responses" in the S3 user
// guide), and it prices requests by class:
//   - class A, "PUT, COPY, POST, LIST": Put*, Copy*, Create*, Upload*, Complete*, List*,
//     RestoreObject, and DeleteObjects (a POST);
//   - free, "DELETE and CANCEL": the other Delete* calls and AbortMultipartUpload;
//   - class B, "GET, SELECT, and all other requests": everything else (GetObject, HeadObject ...).
func s3Units(op string, status int) Units {
	if status >= 500 {
		return Units{}
	}
	switch s3Class(op) {
	case classA:
		return Units{S3ClassA: 1}
	case classB:
		return Units{S3ClassB: 1}
	}
	return Units{}
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
