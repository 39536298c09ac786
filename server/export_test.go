package server

import "github.com/prometheus/client_golang/prometheus"

// RegistryOf exposes a server's metric registry to the tests.
func RegistryOf(s *Server) prometheus.Gatherer { return s.registry }
