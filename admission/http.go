package admission

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/usherhq/usher/internal/httperr"
)

// MutateHTTP returns the http.Handler for POST /mutate.
func (h *Handler) MutateHTTP() http.Handler { return httpHandler{h, hookMutate} }

// ValidateHTTP returns the http.Handler for POST /validate.
func (h *Handler) ValidateHTTP() http.Handler { return httpHandler{h, hookValidate} }

// httpHandler is the HTTP edge: only POST (else 405) of application/json
// (else 415), the body capped (413); a body that is not a v1
// AdmissionReview with a request UID gets 400 (the failurePolicy
// applies), any other review 200 with its UID.
type httpHandler struct {
	h    *Handler
	hook hookKind
}

// scratch holds the per-request buffers, pooled.
type scratch struct {
	body []byte
	rv   decodedReview
}

var (
	jsonContentType = []string{"application/json"}
	allowPost       = []string{http.MethodPost}
	errTooLarge     = errors.New("body too large")
)

func (x httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := x.h
	sc := h.pool.Get().(*scratch)
	defer h.putScratch(sc)
	if code, msg := h.read(w, r, sc); code != 0 {
		h.httpError(w, r, x.hook, code, msg)
		return
	}
	rv := &sc.rv
	if u, ok := w.(UIDRecorder); ok {
		u.RecordUID(string(rv.req.UID))
	}
	dc := h.review(r.Context(), h.state(), x.hook, rv)
	writeReview(w, rv.req.UID, &dc)
}

// read reads and decodes r's review into sc (zeroed by putScratch), or
// says how to refuse it.
func (h *Handler) read(w http.ResponseWriter, r *http.Request, sc *scratch) (code int, msg string) {
	ct := r.Header.Get("Content-Type")
	switch mt, _, _ := mime.ParseMediaType(ct); {
	case r.Method != http.MethodPost:
		w.Header()["Allow"] = allowPost
		return httpStatusNotAllowed, "method " + r.Method + " is not allowed: POST an admission.k8s.io/v1 AdmissionReview"
	case mt != "application/json":
		return httpStatusUnsupported, fmt.Sprintf("Content-Type %q is not supported: want application/json", ct)
	case r.ContentLength > h.maxBody:
		return httpStatusTooLarge, fmt.Sprintf("the body (%d bytes) is larger than the limit of %d bytes", r.ContentLength, h.maxBody)
	}
	body, err := readBody(r.Body, sc.body, r.ContentLength, h.maxBody)
	sc.body = body
	var st statusError
	switch {
	case errors.Is(err, errTooLarge):
		return httpStatusTooLarge, fmt.Sprintf("the body is larger than the limit of %d bytes", h.maxBody)
	case errors.As(err, &st):
		return st.HTTPStatus(), err.Error()
	case err != nil:
		return httpStatusBadRequest, "cannot read the body: " + err.Error()
	case len(body) == 0:
		return httpStatusBadRequest, "the body is empty: want an admission.k8s.io/v1 AdmissionReview"
	}
	rv := &sc.rv
	rv.views.lim = &h.groups
	switch err := decodeReview(string(body), rv); {
	case err != nil:
		return httpStatusBadRequest, "the body is not an AdmissionReview: " + err.Error()
	case rv.apiVersion != reviewAPIVersion || rv.kind != reviewKind:
		return httpStatusBadRequest, fmt.Sprintf("got apiVersion %q kind %q, want %s %s (list v1 in the webhook's admissionReviewVersions)",
			rv.apiVersion, rv.kind, reviewAPIVersion, reviewKind)
	case !rv.hasRequest:
		return httpStatusBadRequest, "the AdmissionReview has no request"
	case rv.req.UID == "":
		return httpStatusBadRequest, "the AdmissionReview's request has no uid"
	}
	return 0, ""
}

// UIDRecorder is a ResponseWriter told the review's UID once decoded (an edge that recovers panics).
type UIDRecorder interface{ RecordUID(uid string) }

// WriteFailure answers the review uid with a denial (code 500), for an
// edge that recovered a panic before the response was written.
func WriteFailure(w http.ResponseWriter, uid string, recovered any) {
	dc := deny(CauseDecisionFailed, httpStatusInternal, "usher: internal error: %v; denied (usher fails closed)", recovered)
	dc.bound()
	writeReview(w, types.UID(uid), &dc)
}

func (h *Handler) putScratch(sc *scratch) {
	if cap(sc.body) > maxPooledBufferBytes {
		sc.body = nil
	}
	sc.rv = decodedReview{}
	h.pool.Put(sc)
}

// httpError answers, and audits, a request that is not a decodable review.
func (h *Handler) httpError(w http.ResponseWriter, r *http.Request, hook hookKind, code int, msg string) {
	dc := decision{rule: RuleDenied, code: int32(code), cause: CauseInvalidRequest, message: msg}
	dc.bound()
	h.record(r.Context(), hook, (*admissionv1.AdmissionRequest)(nil), &dc)
	httperr.Write(w, code, dc.message, "")
}

// statusError is a body read error that says how to answer (a shedding server's 429).
type statusError interface {
	error
	HTTPStatus() int
}

// readBody reads r into buf, failing with errTooLarge past limit bytes; a
// declared size sizes buf once.
func readBody(r io.Reader, buf []byte, size, limit int64) ([]byte, error) {
	if size > 0 && size <= limit && int64(cap(buf)) < size+bytes.MinRead {
		// MinRead: the room ReadFrom needs to see the end; rounded up so
		// that a pooled buffer fits the next body of about the same size.
		buf = make([]byte, 0, (size+bytes.MinRead+4095)&^4095)
	}
	b := bytes.NewBuffer(buf[:0])
	_, err := b.ReadFrom(io.LimitReader(r, limit+1))
	if err == nil && int64(b.Len()) > limit {
		err = errTooLarge
	}
	return b.Bytes(), err
}
