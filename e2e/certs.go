//go:build e2e

package e2e

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/usherhq/usher/internal/pki"
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
	if dir == "" {
		return ServingCert{}, errors.New("e2e: IssueServingCert needs a directory")
	}
	pair, err := tls.LoadX509KeyPair(c.CAFile, c.CAKeyFile)
	if err != nil {
		return ServingCert{}, fmt.Errorf("e2e: CA %s: %w", c.CAFile, err)
	}
	if _, ok := pair.PrivateKey.(crypto.Signer); !ok {
		return ServingCert{}, fmt.Errorf("e2e: CA %s: the key cannot sign", c.CAFile)
	}
	cert, err := pki.Issue(pki.Spec{CommonName: "usher-e2e-webhook", Hosts: []string{"127.0.0.1", "localhost", aggregatedServiceName}}, &pair)
	if err != nil {
		return ServingCert{}, fmt.Errorf("e2e: signing webhook certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return ServingCert{}, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	s := ServingCert{CertFile: filepath.Join(dir, "webhook.crt"), KeyFile: filepath.Join(dir, "webhook.key"), CABundle: pki.CertPEM(pair)}
	if err := os.WriteFile(s.CertFile, pki.CertPEM(cert), 0o644); err != nil {
		return ServingCert{}, err
	}
	if err := os.WriteFile(s.KeyFile, keyPEM, 0o600); err != nil {
		return ServingCert{}, err
	}
	return s, nil
}
