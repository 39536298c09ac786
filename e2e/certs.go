//go:build e2e

package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// ServingCert is a TLS serving certificate for a webhook on 127.0.0.1,
// signed by the cluster's CA, so that the CA's certificate is the
// webhook configuration's caBundle.
type ServingCert struct {
	// CertFile and KeyFile are PEM files, ready for
	// `usher serve --tls-cert CertFile --tls-key KeyFile`.
	CertFile, KeyFile string
	// CABundle is the PEM certificate of the CA that signed it.
	CABundle []byte
}

// TLSConfig loads the certificate for an in-process server.
func (s ServingCert) TLSConfig() (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("e2e: loading serving certificate %s: %w", s.CertFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, nil
}

// IssueServingCert writes into dir a certificate for 127.0.0.1 and
// localhost, valid for a day, signed by the cluster's CA.
func (c *Cluster) IssueServingCert(dir string) (ServingCert, error) {
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		return ServingCert{}, fmt.Errorf("e2e: reading CA certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(c.CAKeyFile)
	if err != nil {
		return ServingCert{}, fmt.Errorf("e2e: reading CA key: %w", err)
	}
	ca, err := tls.X509KeyPair(caPEM, keyPEM)
	if err != nil {
		return ServingCert{}, fmt.Errorf("e2e: CA key pair %s: %w", c.CAFile, err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return ServingCert{}, fmt.Errorf("e2e: CA certificate %s: %w", c.CAFile, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return ServingCert{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return ServingCert{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "usher-e2e-webhook"},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		return ServingCert{}, fmt.Errorf("e2e: signing webhook certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return ServingCert{}, err
	}
	if dir == "" {
		return ServingCert{}, errors.New("e2e: IssueServingCert needs a directory")
	}
	s := ServingCert{
		CertFile: filepath.Join(dir, "webhook.crt"),
		KeyFile:  filepath.Join(dir, "webhook.key"),
		CABundle: caPEM,
	}
	if err := os.WriteFile(s.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return ServingCert{}, err
	}
	if err := os.WriteFile(s.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return ServingCert{}, err
	}
	return s, nil
}
