// Package engine answers access questions from a configuration: it finds a
// user's groups with the partition's resolver (through a per-partition
// cache) and asks the compiled policy.
//
// Rules this package enforces:
//   - Groups supplied with a request are used as the partition's groups
//     mode says (given, resolve, merge), unless they are decided
//     (Request.Decided): then they are the identity as they are.
//   - The partition's lookup policy (identity.Policy) says whether and
//     under which name the resolver is asked; ACLs always match the
//     authenticated name.
//   - A resolver failure denies: nothing is granted on groups that could
//     not be established.
//   - A configuration is one immutable Generation, built by New; group
//     caches survive a reload when the partition's resolvers.Settings.Key
//     is unchanged.
//   - A user's identity is prepared for checks once (an acl.Subject) and
//     never used with another answer or another generation.
//   - There is no global state: each Generation owns its caches (or
//     shares them with the generation it was built on).
package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/identity/cache"
	"github.com/usherhq/usher/identity/resolvers"
	"github.com/usherhq/usher/internal/clip"
	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// Request is an access question. Partition defaults to "default", Queue
// ("") to the partition's default queue, Action to submit; User is required.
type Request struct {
	Partition string
	Queue     string
	User      string
	Groups    []string // supplied with the request, if any
	// Decided says Groups are the whole identity already (Identify's answer).
	Decided bool
	Action  policy.Action
}

// Result is a decision with the identity it was made for.
type Result struct {
	policy.Decision
	Identity identity.Info
}

// Generation is one configuration, immutable and safe for concurrent use:
// the compiled policy and each partition's resolver with its cache.
type Generation struct {
	cfg   *config.Config
	parts map[string]*partition
	key   uint64 // unique: a group cache keeps each user's prepared identity under it
}

// generations numbers the generations of the process (Generation.key).
var generations atomic.Uint64

type partition struct {
	mode     identity.Mode
	policy   *identity.Policy // the generation's, whether or not the resolver was kept
	resolver *resolvers.Resolver
	defaults application.Defaults
	rules    *placement.Rules
	given    givenCache // users whose groups are not in the resolver's cache
}

// givenCache maps a user to the identity last prepared from groups
// supplied with a request (or answered by a resolver without a cache); a
// request with the same groups in the same order reuses it. It is bounded
// (whoever reaches usher's Service can send fresh users with megabytes of
// groups) and emptied when full, so the hit path keeps no bookkeeping.
type givenCache struct {
	m     sync.Map // user -> *givenEntry
	n     atomic.Int64
	bytes atomic.Int64 // names put since the last emptying, replaced entries too
}

// givenEntry's groups are as supplied (the cache's own copy), or with
// resolved, as the resolver answered (in is then unset).
type givenEntry struct {
	groups   []string
	resolved bool
	in       identity.Info
	sub      *acl.Subject
}

// The bounds of a givenCache; the bytes count the user's name and groups,
// 16 more for each group.
const (
	maxGiven           = 10000
	maxGivenBytes      = 16 << 20
	maxGivenEntryBytes = 64 << 10
)

func (c *givenCache) get(user string, groups []string, resolved bool) (*givenEntry, bool) {
	v, ok := c.m.Load(user)
	if !ok {
		return nil, false
	}
	e := v.(*givenEntry)
	return e, e.resolved == resolved && slices.Equal(e.groups, groups)
}

func (c *givenCache) put(user string, e *givenEntry) {
	size := int64(len(user))
	for _, g := range e.groups {
		size += int64(len(g)) + 16
	}
	if size > maxGivenEntryBytes {
		return
	}
	if _, loaded := c.m.Swap(user, e); (!loaded && c.n.Add(1) > maxGiven) || c.bytes.Add(size) > maxGivenBytes {
		c.m.Clear()
		c.n.Store(0)
		c.bytes.Store(0)
	}
}

// New builds the generation of cfg; a partition whose resolvers.Settings.Key
// is as in prev (nil: none) keeps prev's resolver and its cache.
func New(cfg *config.Config, prev *Generation) (*Generation, error) {
	if cfg == nil || cfg.Snapshot == nil || cfg.Admission == nil {
		return nil, fmt.Errorf("engine: configuration is not compiled")
	}
	next := &Generation{cfg: cfg, parts: make(map[string]*partition, len(cfg.Partitions)), key: generations.Add(1)}
	var created []*resolvers.Resolver
	var prevParts map[string]*partition
	if prev != nil {
		prevParts = prev.parts
	}
	for _, p := range cfg.Partitions {
		name := strings.ToLower(p.Name)
		part := &partition{mode: p.Groups, policy: &p.Resolver.Policy, defaults: p.Applications, rules: p.PlacementRules()}
		if old, ok := prevParts[name]; ok && old.resolver.Key == p.Resolver.Key() {
			part.resolver = old.resolver
		} else {
			r, err := resolvers.New(p.Resolver)
			if err != nil {
				closeAll(created)
				return nil, fmt.Errorf("partition %s: %w", p.Name, err)
			}
			created = append(created, r)
			part.resolver = r
		}
		next.parts[name] = part
	}
	return next, nil
}

// Retire is called once next, built on g, serves instead of g: the resolvers
// next did not keep are closed after grace, so that lookups in flight finish.
func (g *Generation) Retire(next *Generation, grace time.Duration) {
	kept := map[*resolvers.Resolver]bool{}
	for _, p := range next.parts {
		kept[p.resolver] = true
	}
	var retired []*resolvers.Resolver
	for _, p := range g.parts {
		if !kept[p.resolver] && p.resolver.Closer != nil {
			retired = append(retired, p.resolver)
		}
	}
	if len(retired) > 0 {
		time.AfterFunc(grace, func() { closeAll(retired) })
	}
}

// Close releases the resolvers' connections.
func (g *Generation) Close() error {
	rs := make([]*resolvers.Resolver, 0, len(g.parts))
	for _, p := range g.parts {
		rs = append(rs, p.resolver)
	}
	return closeAll(rs)
}

func closeAll(rs []*resolvers.Resolver) error {
	var errs []error
	for _, r := range rs {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

func (g *Generation) Config() *config.Config { return g.cfg }

// Snapshot returns the generation's compiled policy.
func (g *Generation) Snapshot() *policy.Snapshot { return g.cfg.Snapshot }

// CacheStats returns the group cache counters of each partition with a cache.
func (g *Generation) CacheStats() map[string]cache.Stats {
	out := map[string]cache.Stats{}
	for name, p := range g.parts {
		if p.resolver.Cache != nil {
			out[name] = p.resolver.Cache.Stats()
		}
	}
	return out
}

func (g *Generation) lookup(name string) (*policy.CompiledPartition, *partition, error) {
	cp, err := g.cfg.Snapshot.Partition(name)
	if err != nil {
		return nil, nil, err
	}
	return cp, g.parts[cp.Name()], nil
}

// Identify returns the identity of user in partition: the supplied groups
// combined with the resolver's as the partition's groups mode says.
func (g *Generation) Identify(ctx context.Context, partitionName, user string, groups []string) (identity.Info, error) {
	_, p, err := g.lookup(partitionName)
	if err != nil {
		return identity.Info{}, err
	}
	// The resolver's cache must not keep the request's body alive.
	groups = clip.Detach(groups, &user)
	return identify(ctx, p, user, groups, false)
}

func (g *Generation) GroupsMode(partitionName string) (identity.Mode, error) {
	_, p, err := g.lookup(partitionName)
	if err != nil {
		return 0, err
	}
	return p.mode, nil
}

// identify is Generation.Identify; decided groups are kept as they are.
func identify(ctx context.Context, p *partition, user string, groups []string, decided bool) (identity.Info, error) {
	if err := acl.ValidName(user); err != nil {
		return identity.Info{}, fmt.Errorf("user: %w", err)
	}
	if decided {
		return identity.Given(user, groups), nil
	}
	in, err := p.policy.Complete(ctx, p.mode, p.resolver.Resolver, user, groups)
	if err != nil {
		return identity.Info{}, &GroupsError{User: user, Err: err}
	}
	return in, nil
}

// GroupsError reports that the groups of a user could not be established;
// the decision is then a denial.
type GroupsError struct {
	User string
	Err  error
}

func (e *GroupsError) Error() string { return fmt.Sprintf("groups of %s: %v", e.User, e.Err) }

func (e *GroupsError) Unwrap() error { return e.Err }

// Check decides req. A non-nil error (unknown partition or queue, invalid
// user name, resolver failure) comes with a Result that denies.
func (g *Generation) Check(ctx context.Context, req Request) (res Result, err error) {
	_, err = g.decide(ctx, &req, false, &res)
	return res, err
}

// Explain decides req and returns the whole trail of ACLs consulted.
func (g *Generation) Explain(ctx context.Context, req Request) (res Result, steps []policy.Step, err error) {
	steps, err = g.decide(ctx, &req, true, &res)
	return res, steps, err
}

// decide answers req into res, which is zero; both go by pointer, as
// copying them costs a fifth of a cached decision.
func (g *Generation) decide(ctx context.Context, req *Request, trail bool, res *Result) ([]policy.Step, error) {
	res.Partition, res.Queue, res.Action, res.User = req.Partition, req.Queue, req.Action, req.User
	cp, p, err := g.lookup(req.Partition)
	if err != nil {
		return nil, err
	}
	// Look the queue up before asking the resolver, and only once.
	q, err := cp.Lookup(req.Queue)
	if err != nil {
		return nil, err
	}
	sub, err := g.identify(ctx, p, req.User, req.Groups, req.Decided, &res.Identity)
	if err != nil {
		return nil, err
	}
	var steps []policy.Step
	res.Decision, steps = ask(q, sub, req.Action, trail)
	return steps, nil
}

// ask decides action on q for sub, with the trail of ACLs when trail.
func ask(q policy.QueueRef, sub *acl.Subject, action policy.Action, trail bool) (policy.Decision, []policy.Step) {
	if trail {
		return q.Explain(sub, action)
	}
	return q.Decide(sub, action), nil
}

// identify is identify for decisions, keeping the user's Subject: with the
// cached answer under the generation's key when the groups come from the
// cache alone, else in the partition's givenCache for the exact groups
// (supplied or decided, or those merged or answered by a resolver without
// a cache). The identity is written to out, and only on success.
func (g *Generation) identify(ctx context.Context, p *partition, user string, groups []string, decided bool, out *identity.Info) (*acl.Subject, error) {
	c := p.resolver.Cache
	cached := !decided && c != nil && (p.mode == identity.ModeResolve || (p.mode == identity.ModeGiven && len(groups) == 0))
	given := decided || (p.mode == identity.ModeGiven && len(groups) > 0)
	switch {
	case cached:
		if in, v, ok := c.Attached(user, g.key); ok {
			*out = *in
			return v.(*acl.Subject), nil
		}
	case given:
		if e, ok := p.given.get(user, groups, false); ok {
			*out = e.in
			return e.sub, nil
		}
	}
	// What follows may be kept: not the caller's memory.
	groups = clip.Detach(groups, &user)
	in, err := identify(ctx, p, user, groups, decided)
	if err != nil {
		return nil, err
	}
	*out = in
	if !cached && !given {
		if e, ok := p.given.get(user, in.Groups, true); ok {
			return e.sub, nil
		}
	}
	sub := acl.NewSubject(in.User, in.Groups)
	switch {
	case cached:
		c.Attach(user, in, g.key, sub)
	case given:
		p.given.put(user, &givenEntry{groups: groups, in: in, sub: sub}) // clip.Detach copied them
	default:
		p.given.put(user, &givenEntry{groups: slices.Clone(in.Groups), resolved: true, sub: sub})
	}
	return sub, nil
}

// AccessResult is every queue of a partition with what a user may do there.
type AccessResult struct {
	Partition string // canonical
	Identity  identity.Info
	Queues    []policy.QueueAccess
}

// Access lists every queue of the partition with what user may do there.
func (g *Generation) Access(ctx context.Context, partitionName, user string, groups []string) (AccessResult, error) {
	cp, p, err := g.lookup(partitionName)
	if err != nil {
		return AccessResult{}, err
	}
	res := AccessResult{Partition: cp.Name()}
	sub, err := g.identify(ctx, p, user, groups, false, &res.Identity)
	if err != nil {
		return AccessResult{}, err
	}
	res.Queues = cp.Access(sub)
	return res, nil
}

// AppRequest asks whether User (with Groups) may perform Action on App.
type AppRequest struct {
	Partition string
	User      string
	Groups    []string
	App       application.Application
	Action    application.Action
	Target    string
}

// DecideApplication decides req with the partition's queue policy and
// application ACL defaults. An error comes with a Decision that denies.
func (g *Generation) DecideApplication(ctx context.Context, req AppRequest) (application.Decision, identity.Info, error) {
	cp, p, err := g.lookup(req.Partition)
	if err != nil {
		return application.Decision{}, identity.Info{}, err
	}
	var in identity.Info
	sub, err := g.identify(ctx, p, req.User, req.Groups, false, &in)
	if err != nil {
		return application.Decision{}, identity.Info{}, err
	}
	pol := application.Policy{Partition: cp, Defaults: p.defaults}
	d, err := pol.Decide(req.App, sub, req.Action, req.Target)
	return d, in, err
}

// PlaceRequest asks where an application goes. Partition, User, Groups
// and Decided are as in Request.
type PlaceRequest struct {
	Partition string
	// Queue is the queue the application names, as YuniKorn's provided
	// rule receives it (unqualified); "" when it names none.
	Queue string
	Tags  map[string]string // names match without regard to case
	// Namespace, when set, is the namespace tag as YuniKorn's shim passes
	// it, overriding one in Tags; ParentQueue, when set with it, reads the
	// namespace.parentqueue tag when a rule reads it.
	Namespace   string
	ParentQueue func(ctx context.Context, namespace string) (string, error)
	User        string
	Groups      []string
	Decided     bool
	// Explain keeps the whole placement trail and the ACL trail of the
	// decisive queue (PlaceResult.Steps); a rejection always has its trail.
	Explain bool
}

// PlaceResult is where an application goes, for whom and by which rules.
type PlaceResult struct {
	placement.Result
	Partition string // canonical
	Identity  identity.Info
	Rules     *placement.Rules
	Steps     []policy.Step // the submit ACL trail of Decisive(); with Explain only
	// Asked is the queue the application names, read as a lower-case path
	// under root, when it is placed in another queue ("" otherwise); Why
	// then says why, rule by rule.
	Asked string
	// Default is set when the application names no queue in a partition
	// without placementrules: it goes to the partition's default queue, as
	// YuniKorn's admission controller labels such pods (filtering.defaultQueue).
	Default bool
	named   string // as given
}

// RuleName names the rule that placed (or, rejected, the step that ended
// placement): "rule 2: tag namespace create" or "the root.default fallback".
func (r *PlaceResult) RuleName() string {
	if r.Default {
		return "the partition's default queue (no placementrules, no queue named)"
	}
	i := r.Final.Rule
	if r.Placed {
		i = r.Rule
	}
	if i < 0 {
		return r.Rules.Describe(i)
	}
	return fmt.Sprintf("rule %d: %s", i+1, r.Rules.Describe(i))
}

// Place decides a submission: the queue YuniKorn's placement rules put the
// application in, and whether the user may submit there.
func (g *Generation) Place(ctx context.Context, req PlaceRequest) (PlaceResult, error) {
	res := PlaceResult{Partition: req.Partition}
	res.Rule = -1
	cp, p, err := g.lookup(req.Partition)
	if err != nil {
		return res, err
	}
	res.Partition, res.Rules = cp.Name(), p.rules
	var in identity.Info
	sub, err := g.identify(ctx, p, req.User, req.Groups, req.Decided, &in)
	if err != nil {
		return res, err
	}
	res.Identity = in
	if req.Queue == "" && p.rules.IsImplicit() {
		q, _ := cp.Lookup("") // the default queue exists
		d, steps := ask(q, sub, policy.Submit, req.Explain)
		res.Default, res.Decision, res.Steps = true, d, steps
		res.Final = placement.Step{Rule: -1, Outcome: placement.Denied, Queue: q.Path(), Decision: d}
		if d.Allowed {
			res.Placed, res.Queue, res.Final.Outcome = true, q.Path(), placement.Placed
		}
		return res, nil
	}
	preq := placement.Request{Subject: sub, Queue: req.Queue, Tags: req.Tags}
	if req.Namespace != "" && p.rules.ReadsTags() {
		preq.Tags = make(map[string]string, len(req.Tags)+2)
		reads := req.ParentQueue != nil && p.rules.ReadsTags(tagParentQueue)
		for k, v := range req.Tags {
			if !strings.EqualFold(k, tagNamespace) && (!reads || !strings.EqualFold(k, tagParentQueue)) {
				preq.Tags[k] = v
			}
		}
		preq.Tags[tagNamespace] = req.Namespace
		if reads {
			pq, err := req.ParentQueue(ctx, req.Namespace)
			if err != nil {
				return res, fmt.Errorf("cannot read Namespace %q for tag %s: %w", req.Namespace, tagParentQueue, err)
			}
			preq.Tags[tagParentQueue] = pq
		}
	}
	if !req.Explain {
		// A rejection, and a placement elsewhere than the queue named,
		// keep their trail for Why; the placed path keeps none.
		res.Result = p.rules.Place(cp, preq)
		res.setAsked(req.Queue)
		if res.Placed && res.Asked == "" {
			return res, nil
		}
	}
	res.Result = p.rules.Explain(cp, preq)
	res.setAsked(req.Queue)
	if req.Explain && res.Placed {
		if q, err := cp.Lookup(res.Decisive()); err == nil {
			_, res.Steps = q.Explain(preq.Subject, policy.Submit)
		}
	}
	return res, nil
}

// Decisive is the queue whose ACLs decided a placement: the placed queue,
// or the nearest existing ancestor of one to create.
func (r *PlaceResult) Decisive() string {
	if r.Create {
		return r.Final.Ancestor
	}
	return r.Queue
}

// setAsked sets Asked when the application is placed elsewhere than the
// queue it names ("" names none), read as a lower-case path under root.
func (r *PlaceResult) setAsked(named string) {
	asked := strings.ToLower(named)
	if asked != "root" && !strings.HasPrefix(asked, "root.") {
		asked = "root." + asked
	}
	r.named, r.Asked = "", ""
	if r.Placed && named != "" && !strings.EqualFold(r.Queue, asked) {
		r.named, r.Asked = named, asked
	}
}

// Reading says, for an application placed elsewhere than the queue it
// names, that the rules read a name not starting with "root." with each
// '.' as "_dot_"; "" otherwise.
func (r *PlaceResult) Reading() string {
	if r.Asked == "" || !strings.Contains(r.named, ".") || strings.HasPrefix(r.named, "root.") {
		return ""
	}
	return fmt.Sprintf("queue %q does not start with \"root.\", so the rules read it as a name with each '.' replaced by \"_dot_\"", r.named)
}

// Why is the reason of the result; with a trail, every rule tried and why
// it placed or fell through.
func (r *PlaceResult) Why() string {
	if r.Default && !r.Placed {
		return r.Decision.Reason()
	}
	if r.Placed && r.Asked == "" || !r.Placed && len(r.Trail) < 2 {
		return r.Reason()
	}
	var b strings.Builder
	if !r.Placed {
		b.WriteString("rejected: ")
	} else if s := r.Reading(); s != "" {
		b.WriteString(s + "; ")
	}
	for i, s := range r.Trail {
		if i > 0 {
			b.WriteString("; ")
		}
		if s.Rule >= 0 {
			fmt.Fprintf(&b, "rule %d (%s): ", s.Rule+1, r.Rules.Describe(s.Rule))
		}
		b.WriteString(s.Reason())
	}
	return b.String()
}

// tagNamespace is the tag YuniKorn's Kubernetes shim sets to the
// application's namespace; tagParentQueue, from its Namespace's
// yunikorn.apache.org/parentqueue annotation.
const tagNamespace, tagParentQueue = "namespace", "namespace.parentqueue"
