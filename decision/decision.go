// Package decision holds the one machine-readable shape of a decision and
// its trail: what usher's decision commands print with -o json and what
// POST /v1/access answers. These types are the source of truth of
// docs/decision.schema.json, which describes every field.
package decision

import (
	"fmt"

	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// Output is one decision's answer, a command's or /v1/access's.
type Output struct {
	Command   string        `json:"command"` // that answers (for /v1/access, that would)
	Allowed   bool          `json:"allowed"` // for place, whether placed; for access, always true
	Reason    string        `json:"reason"`
	Partition string        `json:"partition"`
	Queue     string        `json:"queue,omitempty"`
	Action    string        `json:"action,omitempty"`
	Identity  Identity      `json:"identity"`
	DecidedBy *DecidedBy    `json:"decidedBy,omitempty"` // absent when denied
	Placement *Placement    `json:"placement,omitempty"`
	Trail     *Trail        `json:"trail,omitempty"`  // explain, place, app
	Queues    []QueueRights `json:"queues,omitempty"` // access
	// Application, Owner, TargetQueue and Requirements are app's.
	Application  string        `json:"application,omitempty"`
	Owner        string        `json:"owner,omitempty"`
	TargetQueue  string        `json:"targetQueue,omitempty"`
	Requirements []Requirement `json:"requirements,omitempty"`
}

// Identity is a user and its groups.
type Identity struct {
	User   string  `json:"user"`
	Groups []Group `json:"groups"`
	Lookup *Lookup `json:"lookup,omitempty"` // absent when the resolver was asked for User
}

// Lookup is how the resolver was consulted for an identity (identity.Lookup).
type Lookup struct {
	DirectoryName string `json:"directoryName,omitempty"`
	Rule          int    `json:"rule,omitempty"`
	Outcome       string `json:"outcome,omitempty"`
	Detail        string `json:"detail,omitempty"`
	Summary       string `json:"summary"` // as explain prints it
}

// Group is a group and where it came from (identity.Source).
type Group struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// Placement is the outcome of the placement rules.
type Placement struct {
	Placed bool   `json:"placed"`
	Queue  string `json:"queue,omitempty"`
	Create bool   `json:"create,omitempty"` // YuniKorn creates Queue on submission
	Asked  string `json:"asked,omitempty"`  // engine.PlaceResult.Asked
	Rule   string `json:"rule"`             // the rule that placed, or the step that ended placement
	Reason string `json:"reason,omitempty"` // the placement's own (the answer's says more)
}

// Trail is every check made, in order: the placement rules tried (when
// placement ran), then the ACLs of the queue that decided.
type Trail struct {
	Placement []PlacementStep `json:"placement,omitempty"`
	ACLs      []ACLStep       `json:"acls"`
}

// PlacementStep is one placement rule tried.
type PlacementStep struct {
	Rule     int    `json:"rule"` // from 1, 0 for the root.default fallback
	Describe string `json:"describe"`
	Outcome  string `json:"outcome"` // placement.Outcome
	Queue    string `json:"queue,omitempty"`
	Reason   string `json:"reason"`
}

// ACLStep is one ACL consulted, in check order (policy.Step).
type ACLStep struct {
	Queue   string `json:"queue,omitempty"` // "" for the partition adminacl
	ACL     string `json:"acl"`             // policy.ACLName
	Set     bool   `json:"set"`             // false when the ACL is not configured
	Entry   string `json:"entry,omitempty"`
	Reached bool   `json:"reached"`
	Matched bool   `json:"matched"` // the ACL that allowed, with its entry
	Match   *Match `json:"match,omitempty"`
}

// Match is the ACL entry that allowed.
type Match struct {
	Kind string `json:"kind"` // user, group or wildcard
	Name string `json:"name"`
}

// QueueRights is one queue with a user's rights; the reasons say which
// entry granted the right, or why none did.
type QueueRights struct {
	Queue        string `json:"queue"`
	Leaf         bool   `json:"leaf"`
	Submit       bool   `json:"submit"`
	Admin        bool   `json:"admin"`
	SubmitReason string `json:"submitReason"`
	AdminReason  string `json:"adminReason"`
}

// QueueRightsOf is every queue of queues with the user's rights, in
// order; never nil, so that no queues encode as [].
func QueueRightsOf(queues []policy.QueueAccess) []QueueRights {
	out := make([]QueueRights, 0, len(queues))
	for _, q := range queues {
		out = append(out, QueueRights{Queue: q.Queue, Leaf: q.Leaf, Submit: q.Submit.Allowed, Admin: q.Admin.Allowed,
			SubmitReason: q.Submit.Reason(), AdminReason: q.Admin.Reason()})
	}
	return out
}

// Requirement is something an application decision needs, whether it
// was met, and (with the trail) every check made for it.
type Requirement struct {
	Need   string     `json:"need"` // application.Need
	Queue  string     `json:"queue,omitempty"`
	Met    bool       `json:"met"`
	By     string     `json:"by,omitempty"`     // the check that met it, with the entry
	Checks []AppCheck `json:"checks,omitempty"` // in order; the first that allows decides
}

// AppCheck is one check of an application decision (application.Step).
type AppCheck struct {
	Check string `json:"check"`
	Queue string `json:"queue,omitempty"`
	// Set and Entry are the ACL checked, if any.
	Set        bool   `json:"set"`
	Entry      string `json:"entry,omitempty"`
	Default    bool   `json:"default,omitempty"` // the partition's applicationacls default
	Reached    bool   `json:"reached"`
	Matched    bool   `json:"matched"`
	Match      *Match `json:"match,omitempty"`
	GrantQueue string `json:"grantQueue,omitempty"` // with GrantACL, the queue ACL that allowed
	GrantACL   string `json:"grantACL,omitempty"`
}

// IdentityOf is the Identity of in; its groups are never nil, so that no
// groups encode as [].
func IdentityOf(in identity.Info) Identity {
	id := Identity{User: in.User, Groups: make([]Group, 0, len(in.Groups))}
	for i, g := range in.Groups {
		id.Groups = append(id.Groups, Group{Name: g, Source: string(in.SourceOf(i))})
	}
	if l := in.Lookup; l != (identity.Lookup{}) {
		id.Lookup = &Lookup{DirectoryName: l.Name, Rule: l.Rule, Outcome: string(l.Outcome), Detail: l.Detail, Summary: l.String()}
	}
	return id
}

// ACLSteps converts a policy ACL trail.
func ACLSteps(steps []policy.Step) []ACLStep {
	out := make([]ACLStep, 0, len(steps))
	for _, s := range steps {
		st := ACLStep{Queue: s.Queue, ACL: string(s.ACL), Set: s.Rule != nil, Reached: s.Reached}
		if s.Rule != nil {
			st.Entry = s.Rule.String()
		}
		if s.Reached && s.Match.Allowed() {
			st.Matched = true
			st.Match = &Match{Kind: s.Match.Kind.String(), Name: s.Match.Name}
		}
		out = append(out, st)
	}
	return out
}

// PlacementSteps converts a placement trail; rules describes each rule.
func PlacementSteps(rules *placement.Rules, res placement.Result) []PlacementStep {
	out := make([]PlacementStep, 0, len(res.Trail))
	for _, s := range res.Trail {
		out = append(out, PlacementStep{Rule: s.Rule + 1, Describe: rules.Describe(s.Rule),
			Outcome: s.Outcome.String(), Queue: s.Queue, Reason: s.Reason()})
	}
	return out
}

// Requirements converts an application decision's requirements; checks
// keeps every check made. By names the rule that met one, with the entry
// that matched ("queue admin (user \"jane\")").
func Requirements(d application.Decision, checks bool) []Requirement {
	out := make([]Requirement, 0, len(d.Requirements))
	for _, rq := range d.Requirements {
		r := Requirement{Need: rq.Need.String(), Queue: rq.Queue, Met: rq.Met}
		if st, ok := rq.By(); ok {
			r.By = st.Rule.String()
			if st.Match.Allowed() {
				r.By += fmt.Sprintf(" (%s %q)", st.Match.Kind, st.Match.Name)
			}
		}
		for _, st := range rq.Steps {
			if !checks {
				break
			}
			c := AppCheck{Check: st.Rule.String(), Queue: st.Queue, Set: st.ACL != nil, Default: st.Default, Reached: st.Reached, Matched: st.Allowed}
			if st.ACL != nil {
				c.Entry = st.ACL.String()
			}
			if st.Allowed && st.Match.Allowed() {
				c.Match = &Match{Kind: st.Match.Kind.String(), Name: st.Match.Name}
			}
			if st.Allowed && st.Grant.ACL != "" {
				c.GrantQueue, c.GrantACL = st.Grant.Queue, string(st.Grant.ACL)
			}
			r.Checks = append(r.Checks, c)
		}
		out = append(out, r)
	}
	return out
}
