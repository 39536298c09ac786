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
	"errors"
	"math/big"
	"net"
	"time"
)

// CA is a certificate authority: its certificate, PEM encoded too, and
// its key.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte
	Key  crypto.Signer
}

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
	isCA     bool
}

// NewCA makes a certificate authority named name, valid for a day.
func NewCA(name string) (*CA, error) {
	c, err := issue(Spec{CommonName: name, isCA: true}, nil)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: c.Leaf, PEM: CertPEM(c), Key: c.PrivateKey.(crypto.Signer)}, nil
}

// LoadCA reads a certificate authority from PEM files.
func LoadCA(certFile, keyFile string) (*CA, error) {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, errors.New("pki: the CA key cannot sign")
	}
	return &CA{Cert: pair.Leaf, PEM: CertPEM(pair), Key: key}, nil
}

// Issue returns a certificate signed by ca.
func (ca *CA) Issue(s Spec) (tls.Certificate, error) { return issue(s, ca) }

// SelfSigned returns a serving certificate for hosts that is its own
// authority, named name, valid for d, and its PEM.
func SelfSigned(name string, hosts []string, d time.Duration) (tls.Certificate, []byte, error) {
	c, err := issue(Spec{CommonName: name, Hosts: hosts, NotAfter: time.Now().Add(d), isCA: true}, nil)
	return c, CertPEM(c), err
}

// issue signs s with ca, or with its own key when ca is nil.
func issue(s Spec, ca *CA) (tls.Certificate, error) {
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
		IsCA: s.isCA, BasicConstraintsValid: s.isCA,
	}
	for _, h := range s.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	if s.isCA {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	switch {
	case s.Usage != nil, s.isCA && s.Hosts == nil:
	case s.Hosts != nil:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	default:
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	parent, signer := tmpl, crypto.Signer(key)
	if ca != nil {
		parent, signer = ca.Cert, ca.Key
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

// KeyPEM is the PEM of c's key, PKCS #8.
func KeyPEM(c tls.Certificate) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), err
}
