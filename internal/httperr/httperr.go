// Package httperr writes the one JSON error body every usher endpoint
// answers a refused request with: the admission webhooks (a body that is
// not a review), /v1/access and /metrics.
//
// The body is {"error":"…"} or, when a request id is known,
// {"error":"…","requestID":"…"}, followed by a newline, with Content-Type
// application/json and X-Content-Type-Options nosniff. Strings are encoded
// as encoding/json encodes them.
package httperr

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"github.com/usherhq/usher/internal/jsonscan"
)

var (
	jsonContentType = []string{"application/json"}
	noSniff         = []string{"nosniff"}
)

// Write answers with status code and the JSON error msg; requestID is
// included when not empty.
func Write(w http.ResponseWriter, code int, msg, requestID string) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["X-Content-Type-Options"] = noSniff
	w.WriteHeader(code)
	_, _ = w.Write(Append(nil, msg, requestID))
}

// Append appends the error body to dst.
func Append(dst []byte, msg, requestID string) []byte {
	dst = append(dst, `{"error":`...)
	dst = jsonscan.AppendString(dst, msg)
	if requestID != "" {
		dst = append(dst, `,"requestID":`...)
		dst = jsonscan.AppendString(dst, requestID)
	}
	return append(dst, "}\n"...)
}

// NewRequestID returns a random id that ties an answer to its log records.
func NewRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
