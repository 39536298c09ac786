package placement

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/policy"
)

// Request describes an application to place.
type Request struct {
	Subject *acl.Subject
	Queue   string // the queue the application names, "" for none
	// Tags are the application's tags (the shim passes the namespace as
	// one), matched without regard to case.
	Tags map[string]string
}

// Outcome is what happened to one rule.
type Outcome int

const (
	NoQueue Outcome = iota // the rule produced no queue name (Step.Miss)
	NotLeaf                // the queue is a parent queue
	Denied                 // the user may not submit there (to create it: to its nearest existing ancestor)
	Placed
	Failed // a rule error stopped placement
)

var outcomeNames = [...]string{NoQueue: "no queue", NotLeaf: "not leaf", Denied: "denied", Placed: "placed", Failed: "failed"}

// String is the outcome's name in API answers.
func (o Outcome) String() string {
	if o >= NoQueue && o <= Failed {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Miss says why a rule produced no queue name.
type Miss int

const (
	MissNone     Miss = iota
	MissNoQueue       // the application names no queue (provided rule)
	MissNoTag         // no such tag, or it is empty
	MissFiltered      // the filter does not let the user through
	MissNotExist      // the queue does not exist and create is false
	MissAbsent        // the fallback root.default does not exist
	MissNoGroup       // the user has no (primary or secondary) group
)

// Step is one rule tried, in order.
type Step struct {
	Rule    int // -1 for the root.default fallback
	Outcome Outcome
	Queue   string // the queue produced, "" for none
	// Miss says why no queue was produced; MissBy names the parent rule
	// that missed ("" for the rule itself), Detail the tag or queue.
	Miss           Miss
	MissBy, Detail string
	// Create: Queue would be created; Ancestor, its nearest existing
	// ancestor, decides.
	Create   bool
	Ancestor string
	Decision policy.Decision // when the ACLs were consulted
	Err      error           // when Outcome is Failed
}

// Reason renders the step as one phrase.
func (s Step) Reason() string {
	switch s.Outcome {
	case Placed:
		if s.Create {
			return fmt.Sprintf("placed in %s (to be created): %s", s.Queue, s.Decision.Reason())
		}
		return fmt.Sprintf("placed in %s: %s", s.Queue, s.Decision.Reason())
	case NotLeaf:
		return fmt.Sprintf("%s is a parent queue, applications run in leaf queues only", s.Queue)
	case Denied:
		if s.Queue == RecoveryQueue {
			return fmt.Sprintf("%s is YuniKorn's recovery queue, no submission is ever allowed there", s.Queue)
		}
		if s.Create {
			return fmt.Sprintf("%s does not exist; creating it needs submit on its nearest existing ancestor: %s", s.Queue, s.Decision.Reason())
		}
		return s.Decision.Reason()
	case Failed:
		return "error: " + s.Err.Error()
	}
	by := ""
	if s.MissBy != "" {
		by = "parent rule " + s.MissBy + ": "
	}
	switch s.Miss {
	case MissNoQueue:
		return by + "the application names no queue"
	case MissNoTag:
		return by + fmt.Sprintf("the application has no tag %q", s.Detail)
	case MissFiltered:
		return by + "the filter does not let the user through"
	case MissNotExist:
		if strings.HasSuffix(s.Detail, ".<secondary group>") {
			return by + fmt.Sprintf("no queue %s exists", s.Detail)
		}
		return by + fmt.Sprintf("%s does not exist and create is false", s.Detail)
	case MissAbsent:
		return fmt.Sprintf("%s does not exist", DefaultQueue)
	case MissNoGroup:
		return by + "the user has no such group"
	}
	return by + "no queue"
}

// Result is where an application goes, and how placement got there.
type Result struct {
	Placed   bool
	Queue    string // the canonical path, "" when rejected
	Rule     int    // the rule that placed, -1 for root.default
	Create   bool   // YuniKorn creates the queue on submission
	Decision policy.Decision
	Final    Step   // the step that decided
	Trail    []Step // every rule tried (Explain only)
	Err      error  // a *RuleError that stopped placement
}

// Reason renders the result as one sentence.
func (r Result) Reason() string {
	if r.Placed {
		return r.Final.Reason()
	}
	if r.Err != nil {
		return "placement failed: " + r.Err.Error()
	}
	return "no placement rule placed the application, and " + r.Final.Reason()
}

// RuleError is a rule error: placement stops and the application is
// rejected.
type RuleError struct {
	Rule int
	Msg  string
}

func (e *RuleError) Error() string { return fmt.Sprintf("rule %d: %s", e.Rule+1, e.Msg) }

// Place runs the rules for req against the queues of cp, as YuniKorn's
// placement manager does; a rejection is a Result with Placed false.
func (rs *Rules) Place(cp *policy.CompiledPartition, req Request) Result {
	return rs.run(cp, &req, false)
}

// Explain is Place with Result.Trail: every rule tried, in order.
func (rs *Rules) Explain(cp *policy.CompiledPartition, req Request) Result {
	return rs.run(cp, &req, true)
}

func (rs *Rules) run(cp *policy.CompiledPartition, req *Request, trail bool) Result {
	res := Result{Rule: -1}
	if trail {
		res.Trail = make([]Step, 0, len(rs.rules)+1)
	}
	record := func(st Step) {
		res.Final = st
		if trail {
			res.Trail = append(res.Trail, st)
		}
	}
	for i, r := range rs.rules {
		st := Step{Rule: i}
		name, err := r.place(cp, req, &st)
		if err == nil && name != "" {
			st.Queue = strings.ToLower(name)
			var done bool
			if done, err = judge(cp, req.Subject, &st); done {
				record(st)
				return res.placed(i, st)
			}
		}
		if err != nil {
			st.Outcome, st.Err = Failed, &RuleError{Rule: i, Msg: err.Error()}
			record(st)
			res.Err = st.Err
			return res
		}
		record(st)
	}
	st := Step{Rule: -1}
	if !cp.Has(DefaultQueue) {
		st.Miss = MissAbsent
		record(st)
		return res
	}
	st.Queue = DefaultQueue
	done, _ := judge(cp, req.Subject, &st) // the queue exists: no creation error
	record(st)
	if done {
		return res.placed(-1, st)
	}
	return res
}

func (res Result) placed(i int, st Step) Result {
	res.Placed, res.Queue, res.Rule, res.Create, res.Decision = true, st.Queue, i, st.Create, st.Decision
	return res
}

// judge checks a produced queue: an existing one must be a leaf the user
// may submit to, one to create is judged on its nearest existing
// ancestor; fail is set when YuniKorn would fail to create it.
func judge(cp *policy.CompiledPartition, sub *acl.Subject, st *Step) (placed bool, fail error) {
	if st.Queue == RecoveryQueue {
		st.Outcome = Denied
		return false, nil
	}
	// Has before Lookup: a miss is common here, and Lookup's error costs
	// an allocation.
	var ref policy.QueueRef
	if cp.Has(st.Queue) {
		ref, _ = cp.Lookup(st.Queue)
		if !ref.Leaf() {
			st.Outcome = NotLeaf
			return false, nil
		}
	} else {
		st.Create = true
		cur := st.Queue
		for !cp.Has(cur) || cur == st.Queue {
			i := strings.LastIndexByte(cur, '.')
			if i < 0 {
				st.Outcome, st.Miss = NoQueue, MissNotExist
				return false, nil
			}
			cur = cur[:i]
		}
		ref, _ = cp.Lookup(cur)
		st.Ancestor = ref.Path()
	}
	st.Decision = ref.Decide(sub, policy.Submit)
	if !st.Decision.Allowed {
		st.Outcome = Denied
		return false, nil
	}
	if st.Create && ref.Leaf() {
		return false, fmt.Errorf("%s cannot be created: its nearest existing ancestor %s is a leaf queue", st.Queue, ref.Path())
	}
	st.Outcome = Placed
	return true, nil
}

// place runs one rule (and its parent rules) and returns the fully
// qualified queue name it produces, "" when it produces none (st records
// why), or a rule error.
func (r *rule) place(cp *policy.CompiledPartition, req *Request, st *Step) (string, error) {
	var child string
	groups := req.Subject.Groups()
	switch r.kind {
	case Provided:
		if req.Queue == "" {
			st.Miss = MissNoQueue
			return "", nil
		}
		child = req.Queue
	case User:
		child = req.Subject.User()
	case Fixed:
		child = r.value
	case Tag:
		if child = tag(req.Tags, r.value); child == "" {
			st.Miss, st.Detail = MissNoTag, r.value
			return "", nil
		}
	case PrimaryGroup:
		if len(groups) == 0 {
			st.Miss = MissNoGroup
			return "", nil
		}
		child = groups[0]
	case SecondaryGroup:
		if len(groups) < 2 {
			st.Miss = MissNoGroup
			return "", nil
		}
	}
	if !r.filter.allows(req.Subject) {
		st.Miss = MissFiltered
		return "", nil
	}
	var name string
	switch {
	case r.kind == Fixed && r.qualified:
		name = child
	case r.kind == SecondaryGroup:
		parent, err := r.parentQueue(cp, req, st)
		if parent == "" || err != nil {
			return "", err
		}
		// The first secondary group naming an existing queue; never
		// created, and a name that cannot be a queue is passed over.
		for _, g := range groups[1:] {
			g = strings.ReplaceAll(g, ".", DotReplacement)
			if policy.ValidQueueName(g) && cp.Has(parent+"."+g) {
				return parent + "." + g, nil
			}
		}
		st.Miss, st.Detail = MissNotExist, parent+".<secondary group>"
		return "", nil
	case r.kind == Fixed || r.kind == User || r.kind == PrimaryGroup || !strings.HasPrefix(child, "root."):
		// A name to put under the parent: the user's name always (even
		// one starting with "root."), a provided queue or tag value that
		// is not a full path; a fixed value keeps its dots.
		if r.kind != Fixed {
			child = strings.ReplaceAll(child, ".", DotReplacement)
			if !policy.ValidQueueName(child) {
				return "", fmt.Errorf("%s rule: %q is not a valid queue name (1 to 64 of a-z 0-9 _ : # / @ - after each '.' became %s)", r.kind, child, DotReplacement)
			}
		}
		parent, err := r.parentQueue(cp, req, st)
		if parent == "" || err != nil {
			return "", err
		}
		name = parent + "." + child
	default:
		// A full path from the application: each part must be valid.
		for part := range strings.SplitSeq(child, ".") {
			if !policy.ValidQueueName(part) {
				return "", fmt.Errorf("%s rule: queue %q: %q is not a valid queue name (1 to 64 of a-z 0-9 _ : # / @ -)", r.kind, child, part)
			}
		}
		name = child
	}
	if !r.create && !cp.Has(name) {
		st.Miss, st.Detail = MissNotExist, strings.ToLower(name)
		return "", nil
	}
	return name, nil
}

// parentQueue runs the parent rule: the fully qualified parent queue, ""
// when the parent rule produces none (st records why), or a rule error
// when it lands on a leaf. Without a parent rule the parent is root.
func (r *rule) parentQueue(cp *policy.CompiledPartition, req *Request, st *Step) (string, error) {
	if r.parent == nil {
		return "root", nil
	}
	var pst Step
	p, err := r.parent.place(cp, req, &pst)
	if err != nil {
		return "", err
	}
	if p == "" {
		st.Miss, st.Detail, st.MissBy = pst.Miss, pst.Detail, r.parent.String()
		if pst.MissBy != "" {
			st.MissBy = pst.MissBy
		}
		return "", nil
	}
	if !strings.HasPrefix(p, "root.") {
		p = "root." + p
	}
	if ref, _ := cp.Lookup(p); cp.Has(p) && ref.Leaf() {
		return "", fmt.Errorf("parent rule %s returned a leaf queue: %s", r.parent, strings.ToLower(p))
	}
	return p, nil
}

// tag returns the value of the tag named name (lower case), matching names
// without regard to case. YuniKorn takes whichever equal-fold key its map
// iteration meets first; usher prefers the exact key, then the first in
// sorted order, so the answer is stable.
func tag(tags map[string]string, name string) string {
	if v, ok := tags[name]; ok {
		return v
	}
	keys := slices.Sorted(maps.Keys(tags))
	if i := slices.IndexFunc(keys, func(k string) bool { return strings.EqualFold(k, name) }); i >= 0 {
		return tags[keys[i]]
	}
	return ""
}
