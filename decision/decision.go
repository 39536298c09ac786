// Package decision holds the one machine-readable shape of a decision and
// its trail: what usher's decision commands print with -o json (or -o
// yaml) and what POST /v1/access answers. The JSON Schema in
// docs/decision.schema.json describes the same objects; the types here
// are its source of truth.
package decision

import (
	"fmt"
	"io"

	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// Output is one decision's answer, a command's or /v1/access's.
type Output struct {
	// Command is the command that answers the question: check, explain,
	// place, access or app (for /v1/access, the one that would).
	Command string `json:"command"`
	// Allowed is the answer: for place, whether the application was
	// placed; for access, always true (the rights are in Queues).
	Allowed bool `json:"allowed"`
	// Reason is the answer for people, the second line of the text
	// output.
	Reason string `json:"reason"`
	// Partition is the partition's canonical name.
	Partition string `json:"partition"`
	// Queue is the queue decided on ("" when none was: a rejected
	// placement, an access listing).
	Queue string `json:"queue,omitempty"`
	// Action is submit or admin for queue decisions, the application
	// action for app.
	Action string `json:"action,omitempty"`
	// Identity is the user and the groups the decision was made for.
	Identity Identity `json:"identity"`
	// DecidedBy is the ACL entry that allowed, absent when denied.
	DecidedBy *DecidedBy `json:"decidedBy,omitempty"`
	// Placement is where the placement rules put the application, when
	// they ran.
	Placement *Placement `json:"placement,omitempty"`
	// Trail is how the decision was reached (explain, place, app).
	Trail *Trail `json:"trail,omitempty"`
	// Queues are every queue with the user's rights (access).
	Queues []QueueRights `json:"queues,omitempty"`
	// Application, Owner and TargetQueue describe an application
	// decision (app); Requirements are what it needed, each with its
	// checks when the trail was asked for.
	Application  string        `json:"application,omitempty"`
	Owner        string        `json:"owner,omitempty"`
	TargetQueue  string        `json:"targetQueue,omitempty"`
	Requirements []Requirement `json:"requirements,omitempty"`
}

// Identity is a user and its groups.
type Identity struct {
	// User is the name the request authenticated, which ACLs match.
	User   string  `json:"user"`
	Groups []Group `json:"groups"`
	// Lookup says how the groups were found when that was more than
	// asking the resolver for User; absent in that plain case.
	Lookup *Lookup `json:"lookup,omitempty"`
}

// Lookup is how the resolver was consulted for an identity.
type Lookup struct {
	// DirectoryName is the name the resolver was asked for when a
	// namemapping rule changed it, and Rule that rule's number from 1.
	DirectoryName string `json:"directoryName,omitempty"`
	Rule          int    `json:"rule,omitempty"`
	// Outcome is "skipped" (the user matched skip: only its given groups
	// count), "override" (a static override gave the groups) or
	// "unknown-user-given-groups" (the resolver does not know the user and
	// unknownuser given-groups decided on the given groups alone); absent
	// when the resolver was asked.
	Outcome string `json:"outcome,omitempty"`
	// Detail is the skip prefix, or the resolver's "no such user" answer.
	Detail string `json:"detail,omitempty"`
	// Summary is the lookup in one sentence, as explain prints it.
	Summary string `json:"summary"`
}

// Group is a group and where it came from: given (with the request),
// file, ldap, the static resolver's source, and so on.
type Group struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// Placement is the outcome of the placement rules.
type Placement struct {
	Placed bool `json:"placed"`
	// Queue is the queue placed in ("" when rejected); Create is true when
	// it does not exist yet and YuniKorn creates it on submission.
	Queue  string `json:"queue,omitempty"`
	Create bool   `json:"create,omitempty"`
	// Asked is the queue the application names, read as a path under
	// root, when placement put it in another (Queue); the reason then
	// says why, rule by rule.
	Asked string `json:"asked,omitempty"`
	// Rule names the rule that placed, or the step that ended placement.
	Rule string `json:"rule"`
	// Reason is the placement's own reason (the answer's says more).
	Reason string `json:"reason,omitempty"`
}

// Trail is every check made, in order: the placement rules tried (when
// placement ran), then the ACLs of the queue that decided.
type Trail struct {
	Placement []PlacementStep `json:"placement,omitempty"`
	ACLs      []ACLStep       `json:"acls"`
}

// PlacementStep is one placement rule tried.
type PlacementStep struct {
	// Rule is the rule's number from 1, 0 for the root.default fallback.
	Rule     int    `json:"rule"`
	Describe string `json:"describe"`
	// Outcome is "placed", "denied", "no queue", "not leaf" or "failed".
	Outcome string `json:"outcome"`
	Queue   string `json:"queue,omitempty"`
	Reason  string `json:"reason"`
}

// ACLStep is one ACL consulted, in check order: the queue's submitacl
// (for submit), its adminacl, then each parent's, then the partition's
// adminacl.
type ACLStep struct {
	// Queue is the queue whose ACL this is, "" for the partition adminacl.
	Queue string `json:"queue,omitempty"`
	// ACL is submitacl, adminacl or "partition adminacl".
	ACL string `json:"acl"`
	// Set is false when the ACL is not configured (it grants nothing).
	Set bool `json:"set"`
	// Entry is the ACL as configured ("" when not set).
	Entry string `json:"entry,omitempty"`
	// Reached is false for ACLs after the one that decided.
	Reached bool `json:"reached"`
	// Matched is true for the ACL that allowed; Match is then its entry.
	Matched bool   `json:"matched"`
	Match   *Match `json:"match,omitempty"`
}

// Match is the ACL entry that allowed.
type Match struct {
	// Kind is user, group or wildcard.
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// QueueRights is one queue with a user's rights.
type QueueRights struct {
	Queue string `json:"queue"`
	// Leaf is true for a queue applications run in.
	Leaf   bool `json:"leaf"`
	Submit bool `json:"submit"`
	Admin  bool `json:"admin"`
	// SubmitReason and AdminReason say which entry granted the right, or
	// why none did.
	SubmitReason string `json:"submitReason"`
	AdminReason  string `json:"adminReason"`
}

// QueueRightsOf is every queue of queues with the user's rights, in
// order; never nil, so that no queues encode as []. usher access -o json
// and POST /v1/access with "queues": true answer with it.
func QueueRightsOf(queues []policy.QueueAccess) []QueueRights {
	out := make([]QueueRights, 0, len(queues))
	for _, q := range queues {
		out = append(out, QueueRights{Queue: q.Queue, Leaf: q.Leaf, Submit: q.Submit.Allowed, Admin: q.Admin.Allowed,
			SubmitReason: q.Submit.Reason(), AdminReason: q.Admin.Reason()})
	}
	return out
}

// QueuesReason is the reason of the answer that lists every queue.
func QueuesReason(user, partition string) string {
	return fmt.Sprintf("the rights of %s on every queue of partition %s", user, partition)
}

// Requirement is something an application decision needs, whether it
// was met, and (with the trail) every check made for it.
type Requirement struct {
	// Need is action, "submit to the queue it runs in", "submit to the
	// target queue" or "modify the application".
	Need  string `json:"need"`
	Queue string `json:"queue,omitempty"`
	Met   bool   `json:"met"`
	// By names the check that met it, with the entry.
	By string `json:"by,omitempty"`
	// Checks are the checks, in order; the first that allows decides.
	Checks []AppCheck `json:"checks,omitempty"`
}

// AppCheck is one check of an application decision.
type AppCheck struct {
	// Check is owner, "queue admin", "cluster admin", "application
	// admin", "modify ACL", "view ACL" or "queue submit".
	Check string `json:"check"`
	// Queue is the queue checked (queue admin, queue submit).
	Queue string `json:"queue,omitempty"`
	// Set and Entry are the ACL checked (cluster admin, application
	// admin, modify ACL, view ACL); Set is false for the other checks and
	// for an ACL not configured. Default is true when it is the
	// partition's applicationacls default.
	Set     bool   `json:"set"`
	Entry   string `json:"entry,omitempty"`
	Default bool   `json:"default,omitempty"`
	Reached bool   `json:"reached"`
	Matched bool   `json:"matched"`
	Match   *Match `json:"match,omitempty"`
	// GrantQueue and GrantACL are the queue ACL that allowed (queue
	// admin, cluster admin, queue submit); GrantQueue is "" for the
	// partition adminacl.
	GrantQueue string `json:"grantQueue,omitempty"`
	GrantACL   string `json:"grantACL,omitempty"`
}

// IdentityOf is the Identity of in.
func IdentityOf(in identity.Info) Identity {
	return Identity{User: in.User, Groups: GroupsOf(in), Lookup: LookupOf(in.Lookup)}
}

// GroupsOf is the groups of in with where each came from; never nil, so
// that no groups encode as [].
func GroupsOf(in identity.Info) []Group {
	out := make([]Group, 0, len(in.Groups))
	for i, g := range in.Groups {
		out = append(out, Group{Name: g, Source: string(in.SourceOf(i))})
	}
	return out
}

// LookupOf is the Lookup of l, nil for the plain case.
func LookupOf(l identity.Lookup) *Lookup {
	if l == (identity.Lookup{}) {
		return nil
	}
	return &Lookup{DirectoryName: l.Name, Rule: l.Rule, Outcome: string(l.Outcome), Detail: l.Detail, Summary: l.String()}
}

// IdentityText writes the identity as explain prints it: the user, how it
// was looked up when that was more than asking the resolver for it (the
// directory name a mapping rule gave, a skipped user, a static override,
// an unknown user decided on its given groups), and each group with where
// it came from ("ldap via data-eng-emea" for a nested group).
func IdentityText(w io.Writer, in identity.Info) {
	fmt.Fprintf(w, "\nidentity:\n  user    %s\n", in.User)
	if in.Lookup.Name != "" {
		fmt.Fprintf(w, "  lookup  as %s (namemapping rule %d); ACLs match %s\n", in.Lookup.Name, in.Lookup.Rule, in.User)
	}
	switch in.Lookup.Outcome {
	case identity.OutcomeSkipped:
		fmt.Fprintf(w, "  lookup  none: names starting with %q are not looked up (skip); the given groups only\n", in.Lookup.Detail)
	case identity.OutcomeOverride:
		fmt.Fprintln(w, "  lookup  none: a static override gives the groups")
	case identity.OutcomeUnknownGiven:
		fmt.Fprintf(w, "  lookup  unknown user, decided on the given groups alone (unknownuser given-groups): %s\n", in.Lookup.Detail)
	}
	if len(in.Groups) == 0 {
		fmt.Fprintln(w, "  groups  (none)")
	}
	for i, g := range in.Groups {
		label := "        "
		if i == 0 {
			label = "  groups"
		}
		fmt.Fprintf(w, "%s  %s (%s)\n", label, g, in.SourceOf(i))
	}
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

// MetBy names the rule that met an application requirement, with the
// entry that matched ("queue admin (user \"jane\")"), or "" when none did.
func MetBy(rq application.Requirement) string {
	st, ok := rq.By()
	if !ok {
		return ""
	}
	by := st.Rule.String()
	if st.Match.Allowed() {
		by += fmt.Sprintf(" (%s %q)", st.Match.Kind, st.Match.Name)
	}
	return by
}

// Requirements converts an application decision's requirements; checks
// keeps every check made.
func Requirements(d application.Decision, checks bool) []Requirement {
	out := make([]Requirement, 0, len(d.Requirements))
	for _, rq := range d.Requirements {
		r := Requirement{Need: rq.Need.String(), Queue: rq.Queue, Met: rq.Met, By: MetBy(rq)}
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
