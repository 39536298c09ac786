package authtest

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/pki"
)

// CA issues client certificates for tests.
type CA struct {
	Cert tls.Certificate
	PEM  []byte
}

// NewCA makes a CA named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	c, err := pki.Issue(pki.Spec{CommonName: name, IsCA: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: c, PEM: pki.CertPEM(c)}
}

// WriteFile writes the CA certificate into dir and returns its path.
func (ca *CA) WriteFile(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(p, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// CertOptions vary an issued certificate.
type CertOptions struct {
	// Usage is the extended key usage. Default client authentication.
	Usage []x509.ExtKeyUsage
	// NotAfter defaults to an hour from now.
	NotAfter time.Time
}

// Issue returns a certificate for user cn in groups (its organizations).
func (ca *CA) Issue(t testing.TB, cn string, groups []string, o CertOptions) tls.Certificate {
	t.Helper()
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(time.Hour)
	}
	c, err := pki.Issue(pki.Spec{CommonName: cn, Organization: groups, Usage: o.Usage, NotAfter: o.NotAfter}, &ca.Cert)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
