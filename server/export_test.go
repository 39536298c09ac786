package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/usherhq/usher/serving"
)

// RegistryOf exposes a server's metric registry to the tests.
func RegistryOf(s *Server) prometheus.Gatherer { return s.registry }

// Serving returns what serves.
func (s *Server) Serving() *serving.Store { return s.serving }
