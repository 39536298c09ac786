package policy

import (
	"cmp"
	"fmt"
	"regexp"
	"strings"

	"github.com/usherhq/usher/acl"
)

// queueName is the one rule of what a queue name may look like:
// YuniKorn's QueueNameRegExp (pkg/common/configs), which lets the names
// placement rules build from users and tags (user@domain,
// system:serviceaccount:…) be configured too.
var queueName = regexp.MustCompile(`^[a-zA-Z0-9_:#/@-]{1,64}$`)

// ValidQueueName reports whether s is a valid queue name (queueName).
func ValidQueueName(s string) bool { return queueName.MatchString(s) }

// Snapshot is a compiled configuration: every partition with every queue's
// inherited ACL sets. It is immutable and safe for concurrent use.
type Snapshot struct {
	partitions map[string]*CompiledPartition
	names      []string
	def        *CompiledPartition // the default partition, nil if none
}

// CompiledPartition is one partition of a Snapshot.
type CompiledPartition struct {
	name         string
	queues       map[string]*compiledQueue
	order        []*compiledQueue // depth first, children in configured order
	defaultQueue string
	clusterAdmin *acl.ACL
}

// compiledQueue is a queue with its place in the tree. Nothing is copied
// from the ancestors: a decision walks the chain.
type compiledQueue struct {
	path   string
	depth  int
	leaf   bool
	spec   *Queue
	parent *compiledQueue
	grants bool // an ACL of the queue or an ancestor names anyone (the partition's aside)
}

// Compile checks the structure of the partitions (names, a root named
// root, unique siblings and partitions) and compiles them into a Snapshot.
func Compile(parts []Partition) (*Snapshot, error) {
	s := &Snapshot{partitions: make(map[string]*CompiledPartition, len(parts))}
	for i := range parts {
		p := &parts[i]
		name := strings.ToLower(p.Name)
		if name == "" {
			return nil, fmt.Errorf("partition %d: empty name", i)
		}
		if _, dup := s.partitions[name]; dup {
			return nil, fmt.Errorf("partition %q: defined twice", p.Name)
		}
		cp, err := compilePartition(name, p)
		if err != nil {
			return nil, err
		}
		s.partitions[name] = cp
		s.names = append(s.names, name)
		if name == DefaultPartition {
			s.def = cp
		}
	}
	return s, nil
}

func compilePartition(name string, p *Partition) (*CompiledPartition, error) {
	if p.Root == nil {
		return nil, fmt.Errorf("partition %s: no root queue", name)
	}
	if !strings.EqualFold(p.Root.Name, RootQueue) {
		return nil, fmt.Errorf("partition %s: the top queue is %q: it must be named root", name, p.Root.Name)
	}
	cp := &CompiledPartition{name: name, queues: make(map[string]*compiledQueue), clusterAdmin: p.AdminACL}
	if err := cp.add(p.Root, nil); err != nil {
		return nil, fmt.Errorf("partition %s: %w", name, err)
	}
	switch dq := NormalizeQueue(p.DefaultQueue); {
	case dq != "":
		if _, ok := cp.queues[dq]; !ok {
			return nil, fmt.Errorf("partition %s: default queue %s: %w", name, p.DefaultQueue, ErrUnknownQueue)
		}
		cp.defaultQueue = dq
	case cp.queues["root.default"] != nil:
		cp.defaultQueue = "root.default"
	default:
		cp.defaultQueue = RootQueue
	}
	return cp, nil
}

func (cp *CompiledPartition) add(q *Queue, parent *compiledQueue) error {
	name := strings.ToLower(q.Name)
	if !ValidQueueName(q.Name) {
		return fmt.Errorf("queue %q: invalid name: use 1 to 64 letters, digits, '_', ':', '#', '/', '@' or '-'", q.Name)
	}
	path, depth := name, 0
	if parent != nil {
		path, depth = parent.path+"."+name, parent.depth+1
	}
	if _, dup := cp.queues[path]; dup {
		return fmt.Errorf("queue %s: defined twice (names are not case sensitive)", path)
	}
	cq := &compiledQueue{path: path, depth: depth, leaf: len(q.Children) == 0 && !q.Parent, spec: q, parent: parent}
	cq.grants = parent != nil && parent.grants || q.SubmitACL != nil && !q.SubmitACL.Empty() || q.AdminACL != nil && !q.AdminACL.Empty()
	cp.queues[path] = cq
	cp.order = append(cp.order, cq)
	for _, c := range q.Children {
		if err := cp.add(c, cq); err != nil {
			return err
		}
	}
	return nil
}

// Partitions returns the partition names in configured order.
func (s *Snapshot) Partitions() []string { return s.names }

// Partition returns the named partition ("" is the default partition).
func (s *Snapshot) Partition(name string) (*CompiledPartition, error) {
	if name == "" || name == DefaultPartition {
		if s.def != nil {
			return s.def, nil
		}
		name = DefaultPartition
	}
	if p, ok := s.partitions[strings.ToLower(name)]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("partition %q: %w", name, ErrUnknownPartition)
}

func (p *CompiledPartition) Name() string { return p.name }

// Has reports whether the partition has the queue.
func (p *CompiledPartition) Has(queue string) bool {
	_, ok := p.queues[NormalizeQueue(queue)]
	return ok
}

// Queues returns every queue path, depth first in configured order.
func (p *CompiledPartition) Queues() []string {
	out := make([]string, len(p.order))
	for i, q := range p.order {
		out[i] = q.path
	}
	return out
}

// QueueRef is a queue of a compiled partition, looked up once, so that a
// caller who must know the queue exists before it decides (before asking a
// resolver, say) does not look it up again.
type QueueRef struct {
	p *CompiledPartition
	q *compiledQueue
}

// Lookup finds queue ("" is the partition's default queue), or returns an
// error wrapping ErrUnknownQueue.
func (p *CompiledPartition) Lookup(queue string) (QueueRef, error) {
	queue = cmp.Or(queue, p.defaultQueue)
	if q, ok := p.queues[NormalizeQueue(queue)]; ok {
		return QueueRef{p, q}, nil
	}
	return QueueRef{}, fmt.Errorf("queue %q in partition %s: %w", queue, p.name, ErrUnknownQueue)
}

// Path returns the queue's canonical path ("" for the zero QueueRef).
func (r QueueRef) Path() string {
	if r.q == nil {
		return ""
	}
	return r.q.path
}

// Leaf reports whether the queue is a leaf: it has no children and is not
// marked as a parent. Applications run in leaf queues only.
func (r QueueRef) Leaf() bool { return r.q != nil && r.q.leaf }

// Decide answers whether sub may perform action on queue ("" is the
// partition's default queue). It does not allocate. The error is non-nil
// only for an unknown queue.
func (p *CompiledPartition) Decide(queue string, sub *acl.Subject, action Action) (Decision, error) {
	r, err := p.Lookup(queue)
	if err != nil {
		return Decision{Partition: p.name, Queue: queue, Action: action, User: sub.User()}, err
	}
	return r.Decide(sub, action), nil
}

// Decide answers whether sub may perform action on the queue; see
// CompiledPartition.Decide. It walks the queue's chain, checking each ACL
// in order: the cost grows with the depth and the entries passed over.
func (r QueueRef) Decide(sub *acl.Subject, action Action) Decision {
	q := r.q
	d := Decision{Partition: r.p.name, Queue: q.path, Action: action, User: sub.User()}
	list := 0
	for c := q; c != nil; c = c.parent {
		for i, rule := range [2]*acl.ACL{c.spec.SubmitACL, c.spec.AdminACL} {
			if rule == nil || (action == Admin && i == 0) {
				continue
			}
			if m := rule.Match(sub); m.Allowed() {
				m.List = list
				d.Allowed, d.By = true, Grant{Origin: Origin{c.path, [2]ACLName{SubmitACL, AdminACL}[i], rule}, Match: m}
				return d
			}
			list++
		}
	}
	if ca := r.p.clusterAdmin; ca != nil {
		if m := ca.Match(sub); m.Allowed() {
			m.List = list
			d.Allowed, d.By = true, Grant{Origin: Origin{"", ClusterAdminACL, ca}, Match: m}
		}
	}
	return d
}

// Step is one ACL of an explanation trail.
type Step struct {
	Origin
	Match   acl.Match // the entry that allowed, Kind None when the ACL did not
	Reached bool      // false for ACLs after the deciding one
}

// Explain returns the decision together with the whole trail: every ACL
// that applies to the queue, in check order, and what each said. Queues
// on the path whose ACL is not set appear with a nil Rule.
func (r QueueRef) Explain(sub *acl.Subject, action Action) (Decision, []Step) {
	d := r.Decide(sub, action)
	var steps []Step
	decided := false
	visit := func(o Origin) {
		st := Step{Origin: o, Reached: !decided}
		if o.Rule != nil && !decided {
			st.Match = o.Rule.Match(sub)
			decided = st.Match.Allowed()
		}
		steps = append(steps, st)
	}
	for c := r.q; c != nil; c = c.parent {
		if action == Submit {
			visit(Origin{c.path, SubmitACL, c.spec.SubmitACL})
		}
		visit(Origin{c.path, AdminACL, c.spec.AdminACL})
	}
	if r.p.clusterAdmin != nil {
		visit(Origin{"", ClusterAdminACL, r.p.clusterAdmin})
	}
	return d, steps
}

// QueueAccess is what a user may do on one queue.
type QueueAccess struct {
	Queue  string
	Depth  int
	Leaf   bool
	Submit Decision
	Admin  Decision
}

// Access lists every queue of the partition, depth first, with what sub
// may do there (YARN's mapred queue -showacls).
func (p *CompiledPartition) Access(sub *acl.Subject) []QueueAccess {
	out := make([]QueueAccess, len(p.order))
	for i, q := range p.order {
		r := QueueRef{p, q}
		out[i] = QueueAccess{Queue: q.path, Depth: q.depth, Leaf: q.leaf, Submit: r.Decide(sub, Submit), Admin: r.Decide(sub, Admin)}
	}
	return out
}

// NobodyMaySubmit returns the leaf queues, and the parent queues below
// root without children (placement fills them), whose inherited submit
// and admin ACLs allow nobody at all, for lint.
func (p *CompiledPartition) NobodyMaySubmit() []string {
	var out []string
	for _, q := range p.order {
		if (q.leaf || q.parent != nil && len(q.spec.Children) == 0) && !q.grants && (p.clusterAdmin == nil || p.clusterAdmin.Empty()) {
			out = append(out, q.path)
		}
	}
	return out
}
