package server

import (
	"cmp"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/usherhq/usher/config"
)

// configSource is where usher serve reads its configuration; read takes
// what it holds now, once.
type configSource interface {
	read(getenv func(string) (string, bool)) (snapshot, error)
	name() string
}

// snapshot is a configuration as read: its sum, its generation's name,
// and load, which parses the very bytes summed; ref and obj are the
// ConfigMap a reload's Event goes on.
type snapshot struct {
	sum  [32]byte
	gen  string
	load func() (*config.Config, error)
	ref  ConfigMapRef
	obj  *corev1.ConfigMap
}

// fileSource is --config: a file, a mounted ConfigMap directory, or ""
// for the embedded default.
type fileSource string

func (f fileSource) read(getenv func(string) (string, bool)) (snapshot, error) {
	env := config.WithEnv(getenv)
	if f == "" {
		return snapshot{gen: "embedded default", load: func() (*config.Config, error) { return config.Load("", env) }}, nil
	}
	// Named only "file": anyone who reaches the port reads /readyz.
	files, err := config.Read(string(f))
	if err != nil {
		return snapshot{gen: "file"}, err
	}
	return snapshot{sum: files.Sum(), gen: "file", load: func() (*config.Config, error) { return config.LoadFiles(files, env) }}, nil
}

func (f fileSource) name() string { return cmp.Or(string(f), "<embedded default>") }

func (c *cmSource) read(getenv func(string) (string, bool)) (snapshot, error) {
	objs := c.snapshot()
	data, name, ref, gen := c.merged(objs, nil)
	return snapshot{sum: dataSum(data), gen: gen, ref: ref, obj: c.object(objs, ref), load: func() (*config.Config, error) {
		return config.FromConfigMap(name, data, config.WithEnv(getenv))
	}}, nil
}

// Reload swaps in the configuration when it changed and is valid, saying
// whether it did and why not; a ConfigMap gets an Event either way.
func (s *Server) Reload() (bool, error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	snap, err := s.src.read(s.opts.Getenv)
	if err == nil && snap.sum == s.lastSum {
		return false, nil
	}
	var cfg *config.Config
	if err == nil {
		s.lastSum = snap.sum
		cfg, err = snap.load()
	}
	ok, err := s.apply(cfg, err, snap.gen, snap.sum)
	switch {
	case s.cm == nil:
	case err != nil:
		s.event(snap.ref, snap.obj, corev1.EventTypeWarning, "ConfigRefused",
			fmt.Sprintf("usher replica %s refused %s and keeps serving %s: %s", s.cm.instance, snap.gen, s.status.Load().generation, err))
	default:
		s.event(snap.ref, snap.obj, corev1.EventTypeNormal, "ConfigLoaded",
			fmt.Sprintf("usher replica %s serves %s (sha256 %s)", s.cm.instance, snap.gen, shortSum(snap.sum)))
	}
	return ok, err
}
