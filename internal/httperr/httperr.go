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

// Write answers with status code and the JSON error msg; requestID is
// included when not empty.
func Write(w http.ResponseWriter, code int, msg, requestID string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	b := jsonscan.AppendString([]byte(`{"error":`), msg)
	if requestID != "" {
		b = jsonscan.AppendString(append(b, `,"requestID":`...), requestID)
	}
	_, _ = w.Write(append(b, "}\n"...))
}

// NewRequestID returns a random id that ties an answer to its log records.
func NewRequestID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
