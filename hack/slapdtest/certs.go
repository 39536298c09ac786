package slapdtest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/usherhq/usher/internal/pki"
)

// UntrustedCAFile writes the certificate of a fresh certificate authority
// that signed nothing to a file in a temporary directory and returns its
// path. A client that trusts only this CA must refuse every Server.
func UntrustedCAFile(t testing.TB) string {
	t.Helper()
	ca, err := pki.NewCA("usher slapdtest untrusted CA")
	if err != nil {
		t.Fatalf("slapdtest: generate CA: %v", err)
	}
	path := filepath.Join(t.TempDir(), "untrusted-ca.pem")
	if err := os.WriteFile(path, ca.PEM, 0o600); err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	return path
}

// writeTLSFiles writes a CA and a server certificate for 127.0.0.1 and
// localhost that it signed into dir.
func writeTLSFiles(dir string) (caFile string, caPEM []byte, err error) {
	ca, err := pki.NewCA("usher slapdtest CA")
	if err != nil {
		return "", nil, fmt.Errorf("generate CA: %w", err)
	}
	cert, err := ca.Issue(pki.Spec{CommonName: "localhost", Hosts: []string{"localhost", "127.0.0.1"}})
	if err != nil {
		return "", nil, fmt.Errorf("issue server certificate: %w", err)
	}
	keyPEM, err := pki.KeyPEM(cert)
	if err != nil {
		return "", nil, err
	}
	caFile = filepath.Join(dir, "ca.pem")
	for name, data := range map[string][]byte{
		"ca.pem":         ca.PEM,
		"server.pem":     pki.CertPEM(cert),
		"server-key.pem": keyPEM,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", nil, err
		}
	}
	return caFile, ca.PEM, nil
}
