package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/usherhq/usher/internal/pki"
)

// bareAnswer is what the bare server answers every request with: an
// AdmissionReview response of the size usher's /mutate answers the
// review above with (allowed, with a JSON patch stamping the submitter).
var bareAnswer = `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"UID","allowed":true,"patch":"` +
	base64.StdEncoding.EncodeToString([]byte(`[{"op":"add","path":"/metadata/annotations/yunikorn.apache.org~1user.info",`+
		`"value":"{\"user\":\"alice\",\"groups\":[\"dev\",\"spark-users\",\"system:authenticated\"]}"}]`)) +
	`","patchType":"JSONPatch"}}`

// serveBare is the ceiling /mutate is measured against (docs/benchmarks.md,
// "Close to the wire"): the same Go TLS stack as usher serve (net/http
// over crypto/tls, a self-signed ECDSA P-256 certificate made by the same
// function, HTTP/1.1 and HTTP/2, the same timeouts and header limit) whose
// handler reads the body and answers bareAnswer, deciding nothing. It
// serves until SIGINT or SIGTERM.
func serveBare(addr, caOut string, stderr io.Writer) int {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		fmt.Fprintf(stderr, "usher-load: --addr: %v\n", err)
		return 2
	}
	cert, pem, err := pki.SelfSigned("usher (self-signed)", []string{host, "localhost"}, 365*24*time.Hour)
	if err != nil {
		fmt.Fprintf(stderr, "usher-load: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "usher-load: %v\n", err)
		return 1
	}
	if caOut != "" {
		if err := os.WriteFile(caOut, pem, 0o644); err != nil {
			fmt.Fprintf(stderr, "usher-load: --ca-out: %v\n", err)
			return 1
		}
	}
	answer := []byte(bareAnswer)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := io.Copy(io.Discard, r.Body); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(answer)
		}),
		TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}},
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 100},
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		fmt.Fprintf(stderr, "usher-load: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return 0
}
