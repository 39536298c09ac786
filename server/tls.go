package server

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"os"
	"sync"
	"time"
)

// certSource serves the TLS certificate, re-reading the files when they
// change on disk (cert-manager rotates them in place).
type certSource struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.RWMutex
	cert    *tls.Certificate
	stamp   fileStamp
	checked time.Time
	now     func() time.Time
	every   time.Duration
}

type fileStamp struct {
	certMod, keyMod   time.Time
	certSize, keySize int64
}

func stampOf(certFile, keyFile string) (fileStamp, error) {
	c, err := os.Stat(certFile)
	if err != nil {
		return fileStamp{}, err
	}
	k, err := os.Stat(keyFile)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{c.ModTime(), k.ModTime(), c.Size(), k.Size()}, nil
}

func newCertSource(certFile, keyFile string, log *slog.Logger) (*certSource, error) {
	s := &certSource{certFile: certFile, keyFile: keyFile, log: log, now: time.Now, every: time.Second}
	if err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *certSource) load() error {
	st, err := stampOf(s.certFile, s.keyFile)
	if err != nil {
		return fmt.Errorf("tls: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		return fmt.Errorf("tls: %s, %s: %w", s.certFile, s.keyFile, err)
	}
	s.mu.Lock()
	s.cert, s.stamp = &cert, st
	s.mu.Unlock()
	return nil
}

// get returns the current certificate, first re-reading the files (at most
// once a second) when their size or modification time changed. A pair that
// does not load (say, the certificate written but not yet the key) keeps
// the previous certificate in service.
func (s *certSource) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := s.now()
	s.mu.RLock()
	cert, due := s.cert, now.Sub(s.checked) >= s.every
	s.mu.RUnlock()
	if !due {
		return cert, nil
	}
	s.mu.Lock()
	s.checked = now
	old := s.stamp
	s.mu.Unlock()
	if st, err := stampOf(s.certFile, s.keyFile); err == nil && st != old {
		if err := s.load(); err != nil {
			s.log.Warn("tls: keeping the previous certificate", "err", err)
		} else {
			s.log.Info("tls: certificate reloaded", "cert", s.certFile)
		}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cert, nil
}

// SelfSigned generates an ECDSA certificate for the given hosts, valid for
// a year, for local use when no certificate is configured. It returns the
// certificate and the PEM of the certificate (which is its own CA).
func SelfSigned(hosts []string) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "usher (self-signed)"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	var pemBuf bytes.Buffer
	pem.Encode(&pemBuf, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pemBuf.Bytes(), nil
}
