// Package serving builds what usher serves from a configuration, the
// engine generation and the admission state answering from it (State),
// and puts them in service with one atomic store (Store); usher serve and
// the CLI build through it, so each answers as the other would.
//
// Rules this package enforces:
//   - A review, a request or a command asks one State to the end: one
//     configuration's policy is never mixed with another's admission
//     settings, and nothing waits for a reload.
//   - A failed reload leaves the State in service untouched; a replaced
//     resolver is closed after a minute, so lookups in flight finish.
//   - The authorizers only translate (authorizers.go); a failed group
//     lookup reaches a requester without the directory's detail, which
//     goes to the log under a request id.
package serving

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
)

// State is one configuration in service.
type State struct {
	*engine.Generation
	Admission *admission.State
}

// Build returns the State of cfg, built on prev (engine.New); log receives
// group lookup failures.
func Build(cfg *config.Config, prev *engine.Generation, log *slog.Logger) (*State, error) {
	g, err := engine.New(cfg, prev)
	if err != nil {
		return nil, err
	}
	return &State{Generation: g, Admission: admission.NewState(cfg.Admission, authorizers(g, log))}, nil
}

// Store holds the State in service. It is safe for concurrent use.
type Store struct {
	cur atomic.Pointer[State]
	log *slog.Logger
}

// New returns a Store serving cfg.
func New(cfg *config.Config, log *slog.Logger) (*Store, error) {
	st, err := Build(cfg, nil, log)
	if err != nil {
		return nil, err
	}
	s := &Store{log: log}
	s.cur.Store(st)
	return s, nil
}

func (s *Store) Current() *State { return s.cur.Load() }

// Admission returns the admission state in service, for admission.NewHandler.
func (s *Store) Admission() *admission.State { return s.cur.Load().Admission }

// Swap builds the State of cfg and puts it in service; on error the State
// in service stays. The caller serializes reloads.
func (s *Store) Swap(cfg *config.Config) error {
	old := s.cur.Load()
	next, err := Build(cfg, old.Generation, s.log)
	if err != nil {
		return err
	}
	s.cur.Store(next)
	old.Retire(next.Generation, time.Minute) // a replaced resolver stays open a minute
	return nil
}

// Close releases the resolvers' connections.
func (s *Store) Close() error { return s.cur.Load().Close() }
