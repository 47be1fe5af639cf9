package warcfile

import (
	"crypto/sha256"
	"encoding/hex"
)

// PayloadDigest is the WARC-Payload-Digest of a response record whose payload is body (the
// decoded body, as records store it): "sha256:" and the hex SHA-256. Two fetches of a page that
// did not change have the same one; a record carries it so that crawls can be compared.
func PayloadDigest(body []byte) string {
	sum := sha256.Sum256(body)
	return digestPrefix + hex.EncodeToString(sum[:])
}

// digestPrefix starts every payload digest: its algorithm.
const digestPrefix = "sha256:"
