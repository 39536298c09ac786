// Package engine answers access questions from a configuration: it finds a
// user's groups with the partition's resolver (through a per-partition
// cache) and asks the compiled policy.
//
// Rules this package enforces:
//   - Groups supplied with a request are used as the partition's groups
//     mode says (given, the default: as they are, the resolver is asked only
//     when none are supplied; resolve; merge).
//   - A resolver failure denies: Check returns the error and a Decision
//     that is not Allowed. Nothing is granted on groups that could not be
//     established.
//   - A new configuration is swapped in atomically: a decision in flight
//     finishes on the configuration it started with and never waits for a
//     reload. Group caches survive a reload when the partition's resolver
//     settings did not change.
//   - There is no global state: each Engine owns its caches.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/identity/cache"
	"github.com/usherhq/usher/identity/ldap"
	"github.com/usherhq/usher/policy"
)

// Request is an access question.
type Request struct {
	// Partition defaults to "default".
	Partition string
	// Queue is a queue path such as root.a.b; "" is the partition's default
	// queue.
	Queue string
	// User is required.
	User string
	// Groups are the groups supplied with the request, if any.
	Groups []string
	// Action defaults to submit.
	Action policy.Action
}

// Result is a decision with the identity it was made for.
type Result struct {
	policy.Decision
	// Identity holds the groups used, each with where it came from.
	Identity identity.Info
}

// Engine answers requests from the configuration it currently holds. It is
// safe for concurrent use.
type Engine struct {
	state atomic.Pointer[state]
	// closeGrace is how long a replaced resolver stays open for lookups
	// still in flight before it is closed.
	closeGrace time.Duration
}

type state struct {
	cfg   *config.Config
	parts map[string]*partition
}

type partition struct {
	mode     identity.Mode
	settings config.Resolver
	resolver identity.Resolver
	cache    *cache.Cache // nil for resolvers that need none
	closer   io.Closer    // the resolver's connections, nil when it holds none
}

// New builds an Engine for cfg, constructing each partition's resolver.
func New(cfg *config.Config) (*Engine, error) {
	e := &Engine{closeGrace: time.Minute}
	if err := e.Swap(cfg); err != nil {
		return nil, err
	}
	return e, nil
}

// Swap replaces the configuration. On error the previous configuration
// stays in force. Caches of partitions whose resolver settings are
// unchanged are kept; resolvers that are replaced are closed after a grace
// period, so that lookups in flight finish.
func (e *Engine) Swap(cfg *config.Config) error {
	if cfg == nil || cfg.Snapshot == nil {
		return fmt.Errorf("engine: configuration is not compiled")
	}
	old := e.state.Load()
	next := &state{cfg: cfg, parts: make(map[string]*partition, len(cfg.Partitions))}
	kept := map[*partition]bool{}
	var created []*partition
	for _, p := range cfg.Partitions {
		name := strings.ToLower(p.Name)
		if old != nil {
			if prev, ok := old.parts[name]; ok && reflect.DeepEqual(prev.settings, p.Resolver) && p.Resolver.Type != "file" {
				next.parts[name] = &partition{mode: p.Groups, settings: prev.settings, resolver: prev.resolver, cache: prev.cache, closer: prev.closer}
				kept[prev] = true
				continue
			}
		}
		part, err := newPartition(p)
		if err != nil {
			closeAll(created)
			return fmt.Errorf("partition %s: %w", p.Name, err)
		}
		created = append(created, part)
		next.parts[name] = part
	}
	e.state.Store(next)
	if old != nil {
		var retired []*partition
		for _, p := range old.parts {
			if !kept[p] && p.closer != nil {
				retired = append(retired, p)
			}
		}
		if len(retired) > 0 {
			time.AfterFunc(e.closeGrace, func() { closeAll(retired) })
		}
	}
	return nil
}

// Close releases the resolvers' connections. The engine must not be used
// afterwards.
func (e *Engine) Close() error {
	st := e.state.Load()
	if st == nil {
		return nil
	}
	parts := make([]*partition, 0, len(st.parts))
	for _, p := range st.parts {
		parts = append(parts, p)
	}
	return closeAll(parts)
}

func closeAll(parts []*partition) error {
	var errs []error
	for _, p := range parts {
		if p.closer != nil {
			errs = append(errs, p.closer.Close())
		}
	}
	return errors.Join(errs...)
}

func newPartition(p config.Partition) (*partition, error) {
	r := p.Resolver
	part := &partition{mode: p.Groups, settings: r}
	var base identity.Resolver
	var timeout time.Duration // the cache's default unless set below
	switch r.Type {
	case "", "none":
		part.resolver = identity.None()
		return part, nil
	case "os":
		base = identity.OS()
	case "file":
		base = r.Loaded
		if base == nil {
			var err error
			if base, err = identity.File(r.File); err != nil {
				return nil, err
			}
		}
	case "test":
		base = identity.Static(r.Users)
	case "ldap":
		if r.LDAP == nil {
			return nil, fmt.Errorf("ldap resolver without settings")
		}
		l, err := ldap.New(*r.LDAP)
		if err != nil {
			return nil, err
		}
		base, part.closer = l, l
		// The resolver bounds a lookup by its own timeout and says so in
		// its error. The cache's bound is only a backstop: twice that, so
		// it never cuts short a lookup the ldap settings allow (a timeout
		// of 30s would otherwise end at the cache's default 10s).
		timeout = 2 * l.Config().Timeout
	default:
		return nil, fmt.Errorf("unknown resolver type %q", r.Type)
	}
	part.cache = cache.New(base, cache.Options{
		Name:        r.Type,
		PositiveTTL: r.Cache.PositiveTTL,
		NegativeTTL: r.Cache.NegativeTTL,
		StaleTTL:    r.Cache.StaleTTL,
		MaxEntries:  r.Cache.MaxEntries,
		Timeout:     timeout,
	})
	part.resolver = part.cache
	return part, nil
}

// Config returns the configuration in force.
func (e *Engine) Config() *config.Config { return e.state.Load().cfg }

// Snapshot returns the compiled policy in force.
func (e *Engine) Snapshot() *policy.Snapshot { return e.state.Load().cfg.Snapshot }

// CacheStats returns the group cache counters of each partition that has a
// cache.
func (e *Engine) CacheStats() map[string]cache.Stats {
	out := map[string]cache.Stats{}
	for name, p := range e.state.Load().parts {
		if p.cache != nil {
			out[name] = p.cache.Stats()
		}
	}
	return out
}

func (s *state) partition(name string) (*policy.CompiledPartition, *partition, error) {
	cp, err := s.cfg.Snapshot.Partition(name)
	if err != nil {
		return nil, nil, err
	}
	return cp, s.parts[cp.Name()], nil
}

// Identify returns the identity of user in partition: the supplied groups
// combined with the resolver's as the partition's groups mode says.
func (e *Engine) Identify(ctx context.Context, partitionName, user string, groups []string) (identity.Info, error) {
	_, p, err := e.state.Load().partition(partitionName)
	if err != nil {
		return identity.Info{}, err
	}
	return identify(ctx, p, user, groups)
}

func identify(ctx context.Context, p *partition, user string, groups []string) (identity.Info, error) {
	if err := acl.ValidName(user); err != nil {
		return identity.Info{}, fmt.Errorf("user: %w", err)
	}
	in, err := identity.Complete(ctx, p.mode, p.resolver, user, groups)
	if err != nil {
		return identity.Info{}, &GroupsError{User: user, Err: err}
	}
	return in, nil
}

// GroupsError reports that the groups of a user could not be established
// (the resolver failed or does not know the user). The decision is then a
// denial: nothing is granted on groups that are unknown.
type GroupsError struct {
	User string
	Err  error
}

func (e *GroupsError) Error() string { return fmt.Sprintf("groups of %s: %v", e.User, e.Err) }

// Unwrap returns the resolver's error.
func (e *GroupsError) Unwrap() error { return e.Err }

// Check decides req. A non-nil error (unknown partition or queue, invalid
// user name, resolver failure) comes with a Result that denies.
func (e *Engine) Check(ctx context.Context, req Request) (Result, error) {
	res, _, err := e.decide(ctx, req, false)
	return res, err
}

// Explain decides req and returns the whole trail of ACLs consulted.
func (e *Engine) Explain(ctx context.Context, req Request) (Result, []policy.Step, error) {
	return e.decide(ctx, req, true)
}

func (e *Engine) decide(ctx context.Context, req Request, trail bool) (Result, []policy.Step, error) {
	res := Result{Decision: policy.Decision{Partition: req.Partition, Queue: req.Queue, Action: req.Action, User: req.User}}
	cp, p, err := e.state.Load().partition(req.Partition)
	if err != nil {
		return res, nil, err
	}
	// Look the queue up before asking the resolver, and only once.
	q, err := cp.Lookup(req.Queue)
	if err != nil {
		return res, nil, err
	}
	in, err := identify(ctx, p, req.User, req.Groups)
	if err != nil {
		return res, nil, err
	}
	res.Identity = in
	sub := acl.NewSubject(in.User, in.Groups)
	var steps []policy.Step
	if trail {
		res.Decision, steps = q.Explain(sub, req.Action)
	} else {
		res.Decision = q.Decide(sub, req.Action)
	}
	return res, steps, nil
}

// Access lists every queue of the partition with what user may do there.
func (e *Engine) Access(ctx context.Context, partitionName, user string, groups []string) (identity.Info, []policy.QueueAccess, error) {
	cp, p, err := e.state.Load().partition(partitionName)
	if err != nil {
		return identity.Info{}, nil, err
	}
	in, err := identify(ctx, p, user, groups)
	if err != nil {
		return identity.Info{}, nil, err
	}
	return in, cp.Access(acl.NewSubject(in.User, in.Groups)), nil
}

// AppRequest is a question about a running application: may User (with
// Groups) perform Action on App (for a move, to Target)?
type AppRequest struct {
	Partition string
	User      string
	Groups    []string
	App       application.Application
	Action    application.Action
	Target    string
}

// DecideApplication resolves the user's groups and decides req with the
// partition's queue policy and application ACL defaults. An error comes
// with a Decision that denies.
func (e *Engine) DecideApplication(ctx context.Context, req AppRequest) (application.Decision, identity.Info, error) {
	st := e.state.Load()
	cp, p, err := st.partition(req.Partition)
	if err != nil {
		return application.Decision{}, identity.Info{}, err
	}
	in, err := identify(ctx, p, req.User, req.Groups)
	if err != nil {
		return application.Decision{}, identity.Info{}, err
	}
	pol := application.Policy{Partition: cp, Defaults: st.defaults(cp.Name())}
	d, err := pol.Decide(req.App, acl.NewSubject(in.User, in.Groups), req.Action, req.Target)
	return d, in, err
}

func (s *state) defaults(partition string) application.Defaults {
	for _, p := range s.cfg.Partitions {
		if strings.EqualFold(p.Name, partition) {
			return p.Applications
		}
	}
	return application.Defaults{}
}
