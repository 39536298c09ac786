// Package application decides who may view, modify, kill and move running
// applications, as YARN's application ACLs and Spark's UI ACLs allow.
//
// Rules this package enforces (YARN's; docs/yarn.md):
//   - The owner (exact, case sensitive name), admins of the queue or an
//     ancestor (adminacl), cluster admins (partition adminacl) and
//     application admins (applicationacls admin, spark.admin.acls) may
//     view, modify and kill.
//   - The modify ACL grants modify and kill and implies view; the view ACL
//     grants view. An application that sets neither takes the partition's
//     defaults (applicationacls); without one the ACL allows nobody.
//   - Move needs submit (or admin) on the queue it runs in and on the
//     target, and the right to modify; the owner is not exempt.
//   - Checks run in a fixed order and the first that allows decides; the
//     Decision records every check.
//   - An unowned application (Application.Unowned) passes no owner check.
//   - An unknown queue is an error unless Application.UnknownQueueAsRoot:
//     it is then decided in root and the reason says so.
//   - The zero Decision denies; bad input is an error with a denial.
package application

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/policy"
)

// Action is what a user wants to do with an application.
type Action uint8

const (
	View   Action = iota + 1 // read its logs, statistics and ACLs
	Modify                   // change its priority, timeouts, ...
	Kill
	Move // to another queue
)

var actionNames = [...]string{View: "view", Modify: "modify", Kill: "kill", Move: "move"}

func (a Action) String() string { return nameOf(actionNames[:], a, "Action") }

// nameOf is names[v], or typ(v) for a value without a name.
func nameOf[T ~uint8](names []string, v T, typ string) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", typ, int(v))
}

// ParseAction parses view, modify, kill or move.
func ParseAction(s string) (Action, error) {
	if a := slices.Index(actionNames[:], s); a > 0 {
		return Action(a), nil
	}
	return 0, fmt.Errorf("unknown application action %q: want view, modify, kill or move", s)
}

// Application is an application as far as access decisions go.
type Application struct {
	ID      string // names the application in reasons; optional
	Owner   string // the submitter; required unless Unowned
	Unowned bool   // no owner was recorded (a workload older than usher's stamp); Owner is ""
	Queue   string // the queue path; "" is the partition's default queue
	// UnknownQueueAsRoot decides an application whose Queue the partition
	// lacks (a workload's marker is unchecked) as if it ran in root; a
	// Move's target is never replaced.
	UnknownQueueAsRoot bool
	ViewACL, ModifyACL *acl.ACL // the application's own; nil: the partition's default
}

// Defaults are a partition's applicationacls (Spark's spark-defaults.conf): the
// application admins, and the ACLs of applications setting none; nil allows nobody.
type Defaults struct {
	Admin, View, Modify *acl.ACL
}

// Policy is what application decisions need: a partition's queue policy and defaults.
type Policy struct {
	Partition *policy.CompiledPartition
	Defaults  Defaults
}

// Rule names one check of an application decision.
type Rule uint8

const (
	Owner            Rule = iota + 1
	QueueAdmin            // the adminacl of the queue or an ancestor
	ClusterAdmin          // the partition adminacl (yarn.admin.acl)
	ApplicationAdmin      // applicationacls admin (spark.admin.acls)
	ModifyACL
	ViewACL
	QueueSubmit // the submit right on a queue, checked by Move
)

var ruleNames = [...]string{
	Owner: "owner", QueueAdmin: "queue admin", ClusterAdmin: "cluster admin", ApplicationAdmin: "application admin",
	ModifyACL: "modify ACL", ViewACL: "view ACL", QueueSubmit: "queue submit",
}

func (r Rule) String() string { return nameOf(ruleNames[:], r, "Rule") }

// Need is one requirement of a decision: NeedAction for View, Modify and
// Kill; the other three, all to be met, for Move.
type Need uint8

const (
	NeedAction      Need = iota + 1
	NeedSourceQueue      // submit or admin on the queue it runs in
	NeedTargetQueue      // submit or admin on the target queue
	NeedModify           // the right to modify the application
)

var needNames = [...]string{NeedAction: "action", NeedSourceQueue: "submit to the queue it runs in",
	NeedTargetQueue: "submit to the target queue", NeedModify: "modify the application"}

func (n Need) String() string { return nameOf(needNames[:], n, "Need") }

// Step is one check of a decision, in the order checks are made.
type Step struct {
	Rule    Rule
	Queue   string   // the queue checked, for QueueAdmin and QueueSubmit
	ACL     *acl.ACL // the ACL checked; nil when unset or a ClusterAdmin step not reached
	Default bool     // ACL is the partition's default (applicationacls)
	Reached bool     // false for checks after the one that decided
	Allowed bool
	Match   acl.Match    // the entry that allowed: the owner's name, the ACL entry
	Grant   policy.Grant // the queue ACL entry that allowed, for the queue rules
}

// Requirement is something a decision needs, with the checks made for it.
type Requirement struct {
	Need  Need
	Queue string // for NeedSourceQueue and NeedTargetQueue
	Met   bool
	Steps []Step // in order; the first that allows decides
}

// By returns the step that met the requirement.
func (r Requirement) By() (Step, bool) {
	if i := slices.IndexFunc(r.Steps, func(s Step) bool { return s.Allowed }); i >= 0 {
		return r.Steps[i], true
	}
	return Step{}, false
}

// Decision is the answer to "may this user do this with this application"; zero denies.
type Decision struct {
	Allowed            bool
	Action             Action
	User               string // who asked
	Partition          string
	Application, Owner string // the application's ID and owner
	Queue, Target      string // canonical paths: the application's queue, a Move's target
	UnknownQueue       string // the queue named, when decided in root instead (UnknownQueueAsRoot)
	Requirements       []Requirement
}

// By returns the step that granted the action (for Move, the right to
// modify); ok is false when the action is denied.
func (d Decision) By() (s Step, ok bool) {
	if !d.Allowed {
		return Step{}, false
	}
	for _, r := range d.Requirements {
		if r.Need == NeedAction || r.Need == NeedModify {
			return r.By()
		}
	}
	return Step{}, false
}

// ErrNoOwner is returned for an application without an owner.
var ErrNoOwner = errors.New("application has no owner")

// Decide answers whether sub may perform action on app; target is the
// queue a Move goes to. The error is for bad input only (an unknown queue
// wraps policy.ErrUnknownQueue), with a Decision that denies.
func (p Policy) Decide(app Application, sub *acl.Subject, action Action, target string) (Decision, error) {
	d := Decision{Action: action, Application: app.ID, Owner: app.Owner, Queue: app.Queue, Target: target}
	switch {
	case sub == nil:
		return d, errors.New("application: no subject to decide for")
	case p.Partition == nil:
		return d, errors.New("application: no partition to decide in")
	}
	d.User, d.Partition = sub.User(), p.Partition.Name()
	switch {
	case action < View || action > Move:
		return d, fmt.Errorf("application: unknown action %v", action)
	case app.Unowned && app.Owner != "":
		return d, fmt.Errorf("application: an unowned application names owner %q", app.Owner)
	case app.Owner == "" && !app.Unowned:
		return d, ErrNoOwner
	case action == Move && target == "":
		return d, errors.New("application: move needs a target queue")
	case action != Move && target != "":
		return d, fmt.Errorf("application: a target queue (%q) is only used by move, not %v", target, action)
	}
	if !app.Unowned {
		if err := acl.ValidName(app.Owner); err != nil {
			return d, fmt.Errorf("application owner: %w", err)
		}
	}
	q, err := p.Partition.Lookup(app.Queue)
	if err != nil && app.UnknownQueueAsRoot && errors.Is(err, policy.ErrUnknownQueue) {
		d.UnknownQueue = app.Queue
		q, err = p.Partition.Lookup("root")
	}
	if err != nil {
		return d, err
	}
	d.Queue = q.Path()
	if action != Move {
		r := p.rights(q, app, sub, action)
		d.Requirements = []Requirement{r}
		d.Allowed = r.Met
		return d, nil
	}
	t, err := p.Partition.Lookup(target)
	d.Target = t.Path()
	if err != nil {
		return d, fmt.Errorf("target: %w", err)
	}
	mod := p.rights(q, app, sub, Modify)
	mod.Need = NeedModify
	d.Requirements = []Requirement{submit(NeedSourceQueue, q, sub), submit(NeedTargetQueue, t, sub), mod}
	d.Allowed = d.Requirements[0].Met && d.Requirements[1].Met && mod.Met
	return d, nil
}

func submit(need Need, q policy.QueueRef, sub *acl.Subject) Requirement {
	pd := q.Decide(sub, policy.Submit)
	st := Step{Rule: QueueSubmit, Queue: q.Path(), Reached: true, Allowed: pd.Allowed}
	if pd.Allowed {
		st.Grant, st.Match = pd.By, pd.By.Match
	}
	return Requirement{Need: need, Queue: q.Path(), Met: pd.Allowed, Steps: []Step{st}}
}

// rights makes the checks that grant View, Modify or Kill, in order; those
// after the one that allowed are recorded as not reached.
func (p Policy) rights(q policy.QueueRef, app Application, sub *acl.Subject, action Action) Requirement {
	r := Requirement{Need: NeedAction, Steps: make([]Step, 0, 6)}
	add := func(st Step) {
		if r.Met {
			st.Allowed, st.Match, st.Grant = false, acl.Match{}, policy.Grant{}
		} else {
			st.Reached, r.Met = true, st.Allowed
		}
		r.Steps = append(r.Steps, st)
	}
	owner := Step{Rule: Owner}
	if !app.Unowned && sub.User() == app.Owner {
		owner.Allowed, owner.Match = true, acl.Match{Kind: acl.MatchUser, Name: app.Owner}
	}
	add(owner)
	// One admin decision covers the queue adminacls, then the partition's;
	// a denial records the partition adminacl in the trail.
	qa, ca := Step{Rule: QueueAdmin, Queue: q.Path()}, Step{Rule: ClusterAdmin}
	if !r.Met {
		admin := q.Decide(sub, policy.Admin)
		switch {
		case admin.Allowed && admin.By.ACL == policy.ClusterAdminACL:
			ca.ACL, ca.Allowed, ca.Match, ca.Grant = admin.By.Rule, true, admin.By.Match, admin.By
		case admin.Allowed:
			qa.Allowed, qa.Match, qa.Grant = true, admin.By.Match, admin.By
		default:
			ca.ACL = p.Partition.AdminACL()
		}
	}
	add(qa)
	add(ca)
	add(aclStep(ApplicationAdmin, p.Defaults.Admin, nil, sub))
	add(aclStep(ModifyACL, app.ModifyACL, p.Defaults.Modify, sub))
	if action == View {
		add(aclStep(ViewACL, app.ViewACL, p.Defaults.View, sub))
	}
	return r
}

// aclStep checks the application's own ACL, or the partition's default without one.
func aclStep(rule Rule, own, def *acl.ACL, sub *acl.Subject) Step {
	a := cmp.Or(own, def)
	st := Step{Rule: rule, ACL: a, Default: own == nil && def != nil}
	if a != nil {
		st.Match = a.Match(sub)
		st.Allowed = st.Match.Allowed()
	}
	return st
}

// Reason renders the decision as one line.
func (d Decision) Reason() string {
	if d.UnknownQueue != "" {
		return d.reason() + fmt.Sprintf("; queue %q is not in partition %q, so only admins of root count as its queue admins",
			d.UnknownQueue, d.Partition)
	}
	return d.reason()
}

func (d Decision) reason() string {
	if len(d.Requirements) == 0 {
		if d.Allowed {
			return fmt.Sprintf("%s may %v %s", policy.Name(d.User), d.Action, d.app())
		}
		return "denied: no decision was made"
	}
	if d.Action != Move {
		r := d.Requirements[0]
		if by, ok := r.By(); ok {
			return fmt.Sprintf("%s may %v %s: %s", policy.Name(d.User), d.Action, d.app(), d.why(by))
		}
		return fmt.Sprintf("%s may not %v %s: %s", policy.Name(d.User), d.Action, d.app(), d.whyNot(r))
	}
	var parts []string
	for _, r := range d.Requirements {
		by, ok := r.By()
		switch {
		case d.Allowed:
			parts = append(parts, fmt.Sprintf("%s (%s)", d.need(r, true), d.why(by)))
		case !ok:
			parts = append(parts, d.need(r, false))
		}
	}
	may := "may"
	if !d.Allowed {
		may = "may not"
	}
	return fmt.Sprintf("%s %s move %s to %s: %s", policy.Name(d.User), may, d.app(), d.Target, strings.Join(parts, "; "))
}

func (d Decision) app() string {
	switch {
	case d.Application != "" && d.Owner == "":
		return fmt.Sprintf("%s (no recorded owner, queue %s)", d.Application, d.Queue)
	case d.Application != "":
		return fmt.Sprintf("%s (owner %s, queue %s)", d.Application, policy.Name(d.Owner), d.Queue)
	case d.Owner == "":
		return fmt.Sprintf("the application with no recorded owner in %s", d.Queue)
	}
	return fmt.Sprintf("the application of %s in %s", policy.Name(d.Owner), d.Queue)
}

func (d Decision) need(r Requirement, met bool) string {
	switch {
	case r.Need == NeedSourceQueue && met:
		return "may submit to " + r.Queue + ", where it runs"
	case r.Need == NeedSourceQueue:
		return "no submit or admin right on " + r.Queue + ", where it runs"
	case r.Need == NeedTargetQueue && met:
		return "may submit to " + r.Queue
	case r.Need == NeedTargetQueue:
		return "no submit or admin right on the target " + r.Queue
	case met:
		return "may modify it"
	default:
		return "no right to modify it (" + d.whyNot(r) + ")"
	}
}

func (d Decision) why(s Step) string {
	switch s.Rule {
	case Owner:
		return fmt.Sprintf("%s owns it", policy.Name(s.Match.Name))
	case QueueAdmin:
		return fmt.Sprintf("queue admin: %s in adminacl of %s", policy.Entry(s.Match), s.Grant.Queue)
	case ClusterAdmin:
		return fmt.Sprintf("cluster admin: %s in the adminacl of partition %s", policy.Entry(s.Match), d.Partition)
	case ApplicationAdmin:
		return fmt.Sprintf("application admin: %s in applicationacls admin of partition %s", policy.Entry(s.Match), d.Partition)
	case ModifyACL, ViewACL:
		which := strings.TrimSuffix(s.Rule.String(), " ACL")
		if s.Default {
			return fmt.Sprintf("%s in the default %s ACL (applicationacls %s of partition %s)", policy.Entry(s.Match), which, which, d.Partition)
		}
		return fmt.Sprintf("%s in its %s ACL", policy.Entry(s.Match), which)
	case QueueSubmit:
		return s.Grant.Describe(d.Partition)
	}
	return s.Rule.String()
}

func (d Decision) whyNot(r Requirement) string {
	acls := "modify"
	if slices.ContainsFunc(r.Steps, func(s Step) bool { return s.Rule == ViewACL }) {
		acls = "modify or view"
	}
	return fmt.Sprintf("not the owner, not an admin of %s or its parents, not a cluster or application admin, not in its %s ACL", d.Queue, acls)
}
