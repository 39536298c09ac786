package admission

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/usherhq/usher/internal/httperr"
)

// MutateHTTP returns the http.Handler for POST /mutate.
func (h *Handler) MutateHTTP() http.Handler { return httpHandler{h, hookMutate} }

// ValidateHTTP returns the http.Handler for POST /validate.
func (h *Handler) ValidateHTTP() http.Handler { return httpHandler{h, hookValidate} }

// httpHandler is the thin, defensive HTTP edge:
//
//   - only POST (else 405) with Content-Type application/json (else 415);
//   - the body is capped (WithMaxBodyBytes; larger: 413); a read error
//     that carries an HTTP status (HTTPStatus() int, such as a server's
//     429 when it sheds load) is answered with that status;
//   - a body that is not an admission.k8s.io/v1 AdmissionReview with a
//     request and a request UID gets 400 with a JSON {"error": "..."}: the
//     API server then applies the webhook's failurePolicy;
//   - a decodable review always gets 200 with an AdmissionReview whose
//     response UID is the request's: a bad object is a denial saying what is
//     wrong, not an HTTP error;
//   - once the review's UID is decoded, a ResponseWriter that is a
//     UIDRecorder is told it, so that the edge's recover answers a panic
//     with a denial of that review (WriteFailure).
type httpHandler struct {
	h    *Handler
	hook hookKind
}

// scratch holds the per-request buffers, pooled so that a review allocates
// almost nothing.
type scratch struct {
	body, out, patch []byte
	rv               decodedReview
}

var (
	jsonContentType = []string{"application/json"}
	allowPost       = []string{http.MethodPost}
	errTooLarge     = errors.New("body too large")
)

func (x httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := x.h
	if r.Method != http.MethodPost {
		w.Header()["Allow"] = allowPost
		h.httpError(w, r, x.hook, httpStatusNotAllowed, "method "+r.Method+" is not allowed: POST an admission.k8s.io/v1 AdmissionReview")
		return
	}
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		h.httpError(w, r, x.hook, httpStatusUnsupported, fmt.Sprintf("Content-Type %q is not supported: want application/json", ct))
		return
	}
	if r.ContentLength > h.maxBody {
		h.httpError(w, r, x.hook, httpStatusTooLarge, fmt.Sprintf("the body (%d bytes) is larger than the limit of %d bytes", r.ContentLength, h.maxBody))
		return
	}
	sc, _ := h.pool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	defer h.putScratch(sc)
	body, err := readBody(r.Body, sc.body, r.ContentLength, h.maxBody)
	sc.body = body
	if err != nil {
		var st statusError
		switch {
		case errors.Is(err, errTooLarge):
			h.httpError(w, r, x.hook, httpStatusTooLarge, fmt.Sprintf("the body is larger than the limit of %d bytes", h.maxBody))
		case errors.As(err, &st):
			h.httpError(w, r, x.hook, st.HTTPStatus(), err.Error())
		default:
			h.httpError(w, r, x.hook, httpStatusBadRequest, "cannot read the body: "+err.Error())
		}
		return
	}
	if len(body) == 0 {
		h.httpError(w, r, x.hook, httpStatusBadRequest, "the body is empty: want an admission.k8s.io/v1 AdmissionReview")
		return
	}
	s := string(body)
	st := h.state()
	rv := &sc.rv // zeroed by putScratch
	rv.views.lim = &h.groups
	if err := decodeReview(s, body, rv, st.cfg); err != nil {
		h.httpError(w, r, x.hook, httpStatusBadRequest, "the body is not an AdmissionReview: "+err.Error())
		return
	}
	if rv.apiVersion != reviewAPIVersion || rv.kind != reviewKind {
		h.httpError(w, r, x.hook, httpStatusBadRequest, fmt.Sprintf(
			"got apiVersion %q kind %q, want %s %s (list v1 in the webhook's admissionReviewVersions)",
			rv.apiVersion, rv.kind, reviewAPIVersion, reviewKind))
		return
	}
	if !rv.hasRequest {
		h.httpError(w, r, x.hook, httpStatusBadRequest, "the AdmissionReview has no request")
		return
	}
	if rv.req.UID == "" {
		h.httpError(w, r, x.hook, httpStatusBadRequest, "the AdmissionReview's request has no uid")
		return
	}
	if u, ok := w.(UIDRecorder); ok {
		u.RecordUID(string(rv.req.UID))
	}
	dc := h.review(r.Context(), st, x.hook, rv, &sc.patch)
	sc.out = appendReview(sc.out[:0], rv.req.UID, &dc)
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(sc.out)
}

// UIDRecorder is a ResponseWriter of an edge that recovers panics: the
// handler tells it the UID of the review it answers once decoded.
type UIDRecorder interface{ RecordUID(uid string) }

// WriteFailure answers the review uid with a denial saying usher failed
// to decide (code 500, usher fails closed), for an edge that recovered a
// panic before the response was written.
func WriteFailure(w http.ResponseWriter, uid string, recovered any) {
	dc := deny(CauseDecisionFailed, httpStatusInternal, "usher: internal error: %v; denied (usher fails closed)", recovered)
	dc.bound()
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(appendReview(nil, types.UID(uid), &dc))
}

func (h *Handler) putScratch(sc *scratch) {
	if cap(sc.body) > maxPooledBufferBytes {
		sc.body = nil
	}
	if cap(sc.out) > maxPooledBufferBytes {
		sc.out = nil
	}
	sc.rv = decodedReview{}
	h.pool.Put(sc)
}

// httpError answers a request that is not a decodable review with the
// JSON error body every usher endpoint uses (package httperr) and reports
// it to the audit hook.
func (h *Handler) httpError(w http.ResponseWriter, r *http.Request, hook hookKind, code int, msg string) {
	dc := decision{code: int32(code), cause: CauseInvalidRequest, message: msg}
	dc.bound()
	h.record(r.Context(), hook, (*admissionv1.AdmissionRequest)(nil), &dc)
	httperr.Write(w, code, dc.message, "")
}

// isJSON reports whether a Content-Type is application/json, with or
// without parameters.
func isJSON(ct string) bool {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return strings.EqualFold(strings.TrimSpace(ct), "application/json")
}

// statusError is an error of the body's reader that says how to answer:
// a server that sheds load fails the read of a body it has no memory for
// with 429 Too Many Requests.
type statusError interface {
	error
	HTTPStatus() int
}

// readBody reads r into buf (reusing its capacity), failing with
// errTooLarge once more than max bytes arrive. A declared length (0 <
// size <= max) sizes the buffer once, instead of doubling it as the body
// arrives.
func readBody(r io.Reader, buf []byte, size, max int64) ([]byte, error) {
	buf = buf[:0]
	if r == nil {
		return buf, nil
	}
	if size > 0 && size <= max && int64(cap(buf)) <= size {
		// +1: room to see the end; rounded up so that a pooled buffer
		// fits the next body of about the same size.
		buf = make([]byte, 0, (size+1+4095)&^4095)
	}
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > max {
				return buf, errTooLarge
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return buf, errTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
