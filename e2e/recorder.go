//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
)

// Review is one AdmissionReview request a Recorder received, with the URL
// path it was sent to (/mutate, /validate, ...).
type Review struct {
	Path    string
	Request admissionv1.AdmissionRequest
}

// Responder decides a Recorder's answer to one request. It returns the
// response without UID (the Recorder copies it); nil allows the request
// unchanged.
type Responder func(path string, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// Recorder is an admission webhook server on 127.0.0.1 that records every
// AdmissionReview the API server sends it and answers through a Responder.
// It is a measuring instrument for the harness and for scenarios that need
// to see what the API server sends (the userInfo of controllers, say); it
// is not a stand-in for usher.
type Recorder struct {
	// URL is https://127.0.0.1:PORT; append the path to register.
	URL string
	// CABundle verifies the server: the cluster's CA.
	CABundle []byte

	srv     *httptest.Server
	respond Responder
	mu      sync.Mutex
	reviews []Review
}

// StartRecorder starts a Recorder whose serving certificate (issued by the
// cluster's CA) is written into dir. A nil respond allows everything.
func (c *Cluster) StartRecorder(dir string, respond Responder) (*Recorder, error) {
	cert, err := c.IssueServingCert(dir)
	if err != nil {
		return nil, err
	}
	tlsCfg, err := cert.TLSConfig()
	if err != nil {
		return nil, err
	}
	r := &Recorder{CABundle: cert.CABundle, respond: respond}
	r.srv = httptest.NewUnstartedServer(http.HandlerFunc(r.serve))
	r.srv.TLS = tlsCfg
	r.srv.StartTLS()
	r.URL = r.srv.URL
	return r, nil
}

func (r *Recorder) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 8<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not an AdmissionReview request: %v", err), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.reviews = append(r.reviews, Review{Path: req.URL.Path, Request: *review.Request})
	r.mu.Unlock()
	var resp *admissionv1.AdmissionResponse
	if r.respond != nil {
		resp = r.respond(req.URL.Path, review.Request)
	}
	if resp == nil {
		resp = &admissionv1.AdmissionResponse{Allowed: true}
	}
	resp.UID = review.Request.UID
	review.Request = nil
	review.Response = resp
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

// Reviews returns a copy of the requests received so far, oldest first.
func (r *Recorder) Reviews() []Review {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Review(nil), r.reviews...)
}

// Close stops the server.
func (r *Recorder) Close() { r.srv.Close() }
