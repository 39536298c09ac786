package slapdtest

import (
	"crypto/x509"
	"encoding/pem"
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
	ca, err := pki.Issue(pki.Spec{CommonName: "usher slapdtest untrusted CA", IsCA: true}, nil)
	if err != nil {
		t.Fatalf("slapdtest: generate CA: %v", err)
	}
	path := filepath.Join(t.TempDir(), "untrusted-ca.pem")
	if err := os.WriteFile(path, pki.CertPEM(ca), 0o600); err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	return path
}

// writeTLSFiles writes a CA and a server certificate for 127.0.0.1 and
// localhost that it signed into dir.
func writeTLSFiles(dir string) (caFile string, caPEM []byte, err error) {
	ca, err := pki.Issue(pki.Spec{CommonName: "usher slapdtest CA", IsCA: true}, nil)
	if err != nil {
		return "", nil, fmt.Errorf("generate CA: %w", err)
	}
	caPEM = pki.CertPEM(ca)
	cert, err := pki.Issue(pki.Spec{CommonName: "localhost", Hosts: []string{"localhost", "127.0.0.1"}}, &ca)
	if err != nil {
		return "", nil, fmt.Errorf("issue server certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return "", nil, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	caFile = filepath.Join(dir, "ca.pem")
	for name, data := range map[string][]byte{
		"ca.pem":         caPEM,
		"server.pem":     pki.CertPEM(cert),
		"server-key.pem": keyPEM,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", nil, err
		}
	}
	return caFile, caPEM, nil
}
