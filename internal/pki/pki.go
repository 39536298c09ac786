// Package pki makes the certificates usher needs without a certificate
// authority of its own: usher serve's self-signed serving certificate,
// and the authorities and certificates that tests, the slapd harness and
// the e2e harness issue. Keys are ECDSA P-256.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"
)

// Spec describes a certificate to issue.
type Spec struct {
	CommonName   string
	Organization []string
	// Hosts are the DNS names and IP addresses of a server.
	Hosts []string
	// Usage defaults to server authentication with Hosts, else client
	// authentication.
	Usage []x509.ExtKeyUsage
	// NotAfter defaults to a day from now.
	NotAfter time.Time
	IsCA     bool
}

// SelfSigned returns a serving certificate for hosts that is its own
// authority, named name, valid for d, and its PEM.
func SelfSigned(name string, hosts []string, d time.Duration) (tls.Certificate, []byte, error) {
	c, err := Issue(Spec{CommonName: name, Hosts: hosts, NotAfter: time.Now().Add(d), IsCA: true}, nil)
	return c, CertPEM(c), err
}

// Issue returns a certificate for s signed by ca, or by its own key when
// ca is nil.
func Issue(s Spec, ca *tls.Certificate) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, err
	}
	if s.NotAfter.IsZero() {
		s.NotAfter = time.Now().Add(24 * time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: s.CommonName, Organization: s.Organization},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: s.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: s.Usage,
		IsCA: s.IsCA, BasicConstraintsValid: s.IsCA,
	}
	for _, h := range s.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	if s.IsCA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	switch {
	case s.Usage != nil, s.IsCA && s.Hosts == nil:
	case s.Hosts != nil:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	default:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	parent, signer := tmpl, crypto.Signer(key)
	if ca != nil {
		parent, signer = ca.Leaf, ca.PrivateKey.(crypto.Signer)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, err
}

// CertPEM is the PEM of c's certificate.
func CertPEM(c tls.Certificate) []byte {
	if len(c.Certificate) == 0 {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
}
