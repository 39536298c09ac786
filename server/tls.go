package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// certSource serves the TLS certificate, re-reading the files when they
// change on disk (cert-manager rotates them in place).
type certSource struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   fileStamp
	checked time.Time
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
	s := &certSource{certFile: certFile, keyFile: keyFile, log: log}
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
	s.cert, s.stamp = &cert, st
	return nil
}

// get re-reads the files at most once a second when they changed; a pair
// that does not load (the key not yet written) keeps the previous one.
func (s *certSource) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := time.Now(); now.Sub(s.checked) >= time.Second {
		s.checked = now
		if st, err := stampOf(s.certFile, s.keyFile); err == nil && st != s.stamp {
			if err := s.load(); err != nil {
				s.log.Warn("tls: keeping the previous certificate", "err", err)
			} else {
				s.log.Info("tls: certificate reloaded", "cert", s.certFile)
			}
		}
	}
	return s.cert, nil
}
