package auth

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
)

// ClientCertAuthenticator authenticates a TLS client certificate that
// chains to a configured CA, as kube-apiserver reads it: the common name
// is the user, the organizations plus system:authenticated the groups.
//
// The TLS server must ask for client certificates without verifying them
// itself (tls.RequestClientCert): a certificate from another CA (the API
// server calling the webhooks with its own) must not break the handshake.
type ClientCertAuthenticator struct {
	roots *x509.CertPool
}

// NewClientCertAuthenticator reads the PEM CA bundle in caFile.
func NewClientCertAuthenticator(caFile string) (*ClientCertAuthenticator, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("client CA: %s holds no PEM certificate", caFile)
	}
	return &ClientCertAuthenticator{roots: pool}, nil
}

// AuthenticateRequest implements Authenticator. A request without a client
// certificate, or with one that does not verify, is not authenticated (ok
// false, no error); Verify tells why.
func (a *ClientCertAuthenticator) AuthenticateRequest(r *http.Request) (User, bool, error) {
	if r.TLS == nil {
		return User{}, false, nil
	}
	u, err := a.Verify(r.TLS.PeerCertificates) // User{} on an error
	return u, err == nil, nil
}

// Verify checks a peer's chain (leaf first) and returns its user.
func (a *ClientCertAuthenticator) Verify(chain []*x509.Certificate) (User, error) {
	if len(chain) == 0 {
		return User{}, errors.New("no certificate")
	}
	opts := x509.VerifyOptions{
		Roots:         a.roots,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	leaf := chain[0]
	if _, err := leaf.Verify(opts); err != nil {
		return User{}, err
	}
	if leaf.Subject.CommonName == "" {
		return User{}, errors.New("client certificate has no common name")
	}
	groups := make([]string, 0, len(leaf.Subject.Organization)+1)
	groups = append(groups, leaf.Subject.Organization...)
	if !slices.Contains(groups, systemAuthenticated) {
		groups = append(groups, systemAuthenticated)
	}
	return User{Name: leaf.Subject.CommonName, Groups: groups}, nil
}

// systemAuthenticated is the group kube-apiserver gives every
// authenticated user.
const systemAuthenticated = "system:authenticated"
