package pki

import (
	"crypto/x509"
	"testing"
	"time"
)

// A server certificate verifies against its CA for its hosts and server
// authentication; a client certificate carries its organizations; a
// self-signed one is its own root.
func TestIssue(t *testing.T) {
	ca, err := Issue(Spec{CommonName: "test CA", IsCA: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(CertPEM(ca))
	srv, err := Issue(Spec{CommonName: "srv", Hosts: []string{"localhost", "127.0.0.1"}}, &ca)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"localhost", "127.0.0.1"} {
		if _, err := srv.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	cli, err := Issue(Spec{CommonName: "alice", Organization: []string{"dev"}}, &ca)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil ||
		cli.Leaf.Subject.Organization[0] != "dev" {
		t.Errorf("client: %v %v", err, cli.Leaf.Subject)
	}
	self, pem, err := SelfSigned("self", []string{"::1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	own := x509.NewCertPool()
	own.AppendCertsFromPEM(pem)
	if _, err := self.Leaf.Verify(x509.VerifyOptions{Roots: own, DNSName: "::1"}); err != nil {
		t.Error(err)
	}
}
