package faultproxy

import (
	"fmt"
	"hash/crc32"
	"net/http"
	"strconv"
)

// The error answers, each in its service's own shape, so that the SDK decodes them as it decodes
// the service's: DynamoDB and SQS speak JSON 1.0 with a "__type" (SQS adds the query-compatible
// code in x-amzn-query-error), S3 answers an XML <Error>.

// errorAnswer is an error answer: its status, headers and body.
type errorAnswer struct {
	status int
	header http.Header
	body   []byte
}

// throttleAnswer is the throttling answer of service s; seq picks one of DynamoDB's two codes.
func throttleAnswer(s Service, seq uint64) errorAnswer {
	switch s {
	case DynamoDB:
		code := "ProvisionedThroughputExceededException"
		if seq%2 == 1 {
			code = "ThrottlingException"
		}
		return dynamoError(http.StatusBadRequest, code, "The level of configured provisioned throughput for the table was exceeded (faultproxy)")
	case SQS:
		return sqsError(http.StatusBadRequest, "RequestThrottled", "Sender", "Request is throttled (faultproxy)")
	default:
		return s3Error(http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate. (faultproxy)")
	}
}

// internalAnswer is the 500 of service s.
func internalAnswer(s Service) errorAnswer {
	switch s {
	case DynamoDB:
		return dynamoError(http.StatusInternalServerError, "InternalServerError", "Internal server error (faultproxy)")
	case SQS:
		return sqsError(http.StatusInternalServerError, "InternalError", "Receiver", "We encountered an internal error. Please try again. (faultproxy)")
	default:
		return s3Error(http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again. (faultproxy)")
	}
}

// dynamoError is a DynamoDB error answer, with the CRC32 of its body that DynamoDB sends and the
// SDK checks.
func dynamoError(status int, code, msg string) errorAnswer {
	body := fmt.Appendf(nil, `{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":%q}`, code, msg)
	h := http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Requestid": {"faultproxy"},
		"X-Amz-Crc32": {strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)}}
	return errorAnswer{status, h, body}
}

func sqsError(status int, code, fault, msg string) errorAnswer {
	h := http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Requestid": {"faultproxy"},
		"X-Amzn-Query-Error": {code + ";" + fault}}
	return errorAnswer{status, h, fmt.Appendf(nil, `{"__type":"com.amazonaws.sqs#%s","message":%q}`, code, msg)}
}

func s3Error(status int, code, msg string) errorAnswer {
	h := http.Header{"Content-Type": {"application/xml"}, "X-Amz-Request-Id": {"faultproxy"}}
	return errorAnswer{status, h, fmt.Appendf(nil,
		`<?xml version="1.0" encoding="UTF-8"?>`+"\n"+`<Error><Code>%s</Code><Message>%s</Message><RequestId>faultproxy</RequestId><HostId>faultproxy</HostId></Error>`,
		code, msg)}
}

// write sends the answer.
func (a errorAnswer) write(w http.ResponseWriter) {
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(a.body)))
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}
