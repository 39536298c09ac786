package slapdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// authority is a certificate authority made for one test: a self-signed CA
// certificate and its key.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newAuthority(name string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"usher slapdtest"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// issueServer returns PEM encoded certificate and PKCS#8 key for a server
// known as 127.0.0.1 and localhost.
func (a *authority) issueServer() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return n
}

// UntrustedCAFile writes the certificate of a fresh certificate authority
// that signed nothing to a file in a temporary directory and returns its
// path. A client that trusts only this CA must refuse every Server.
func UntrustedCAFile(t testing.TB) string {
	t.Helper()
	ca, err := newAuthority("usher slapdtest untrusted CA")
	if err != nil {
		t.Fatalf("slapdtest: generate CA: %v", err)
	}
	path := filepath.Join(t.TempDir(), "untrusted-ca.pem")
	if err := os.WriteFile(path, ca.pem, 0o600); err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	return path
}

func writeTLSFiles(dir string) (caFile string, caPEM []byte, err error) {
	ca, err := newAuthority("usher slapdtest CA")
	if err != nil {
		return "", nil, fmt.Errorf("generate CA: %w", err)
	}
	certPEM, keyPEM, err := ca.issueServer()
	if err != nil {
		return "", nil, fmt.Errorf("issue server certificate: %w", err)
	}
	caFile = filepath.Join(dir, "ca.pem")
	for name, data := range map[string][]byte{
		"ca.pem":         ca.pem,
		"server.pem":     certPEM,
		"server-key.pem": keyPEM,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", nil, err
		}
	}
	return caFile, ca.pem, nil
}
