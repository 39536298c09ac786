// Package serving builds what usher serves from a configuration: the
// engine generation and the admission state whose authorizers answer from
// that same generation, together (State), and puts them in service with
// one atomic store (Store). usher serve and the CLI's check, explain,
// place and test build through it, so each answers as the other would.
//
// Rules this package enforces:
//   - A review, a /v1/access request or a command loads one State and
//     asks it to the end: the policy of one configuration is never mixed
//     with the admission settings of another, and nothing waits for a
//     reload.
//   - A reload that fails leaves the State in service untouched; a
//     replaced resolver is closed after a grace period (one minute), so
//     lookups in flight finish.
//   - The authorizers only translate (authorizers.go): the rules are
//     engine's and application's. A failed group lookup reaches a
//     requester without the directory's detail, which goes to the log
//     under a request id.
package serving

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
)

// State is one configuration in service: its engine generation and the
// admission state whose authorizers answer from that generation.
type State struct {
	*engine.Generation
	Admission *admission.State
}

// Build returns the State of cfg, built on prev (nil: none; see
// engine.New). log receives group lookup failures.
func Build(cfg *config.Config, prev *State, log *slog.Logger) (*State, error) {
	var pg *engine.Generation
	if prev != nil {
		pg = prev.Generation
	}
	g, err := engine.New(cfg, pg)
	if err != nil {
		return nil, err
	}
	return &State{Generation: g, Admission: admission.NewState(cfg.Admission, authorizers(g, log))}, nil
}

// Store holds the State in service. It is safe for concurrent use.
type Store struct {
	cur atomic.Pointer[State]
	log *slog.Logger
	// grace is how long a resolver a reload replaced stays open.
	grace time.Duration
}

// New returns a Store serving cfg.
func New(cfg *config.Config, log *slog.Logger) (*Store, error) {
	st, err := Build(cfg, nil, log)
	if err != nil {
		return nil, err
	}
	s := &Store{log: log, grace: time.Minute}
	s.cur.Store(st)
	return s, nil
}

// Current returns the State in service.
func (s *Store) Current() *State { return s.cur.Load() }

// Admission returns the admission state in service: the provider of
// admission.WithState.
func (s *Store) Admission() *admission.State { return s.cur.Load().Admission }

// Swap builds the State of cfg and puts it in service with one atomic
// store; on error the State in service stays. Reloads are not
// concurrent: the caller serializes them.
func (s *Store) Swap(cfg *config.Config) error {
	old := s.cur.Load()
	next, err := Build(cfg, old, s.log)
	if err != nil {
		return err
	}
	s.cur.Store(next)
	old.Retire(next.Generation, s.grace)
	return nil
}

// Close releases the resolvers' connections; the Store must not be used
// afterwards.
func (s *Store) Close() error { return s.cur.Load().Close() }
