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

	mu      sync.RWMutex
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
	s.mu.Lock()
	s.cert, s.stamp = &cert, st
	s.mu.Unlock()
	return nil
}

// get returns the current certificate, re-reading the files at most once
// a second when they changed; a pair that does not load (the key not yet
// written) keeps the previous one.
func (s *certSource) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := time.Now()
	s.mu.RLock()
	cert, due := s.cert, now.Sub(s.checked) >= time.Second
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
