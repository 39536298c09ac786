package decision

// The wire format of usher's decision API, POST /v1/access: what a client
// sends and what usher serve answers. The server (package server) and the
// kubectl plugin (kubectl-usher) share these types, so that the plugin
// neither links the server nor keeps a copy that drifts from it.

// AccessRequest is the body of POST /v1/access. Without Application it
// asks about a queue (action submit or admin); with it, about a running
// application (action view, modify, kill or move, with TargetQueue for a
// move).
type AccessRequest struct {
	Partition   string             `json:"partition,omitempty"`
	Queue       string             `json:"queue,omitempty"`
	User        string             `json:"user"`
	Groups      []string           `json:"groups,omitempty"`
	Action      string             `json:"action,omitempty"`
	Application *AccessApplication `json:"application,omitempty"`
	TargetQueue string             `json:"targetQueue,omitempty"`
	// Place asks where the application goes: the partition's placement
	// rules run (the implicit provided rule when it has none), Queue is
	// the queue the application names (the provided rule's input, "" for
	// none) and Tags its tags; the decision is submit on the queue placed
	// in. Without Place, Queue is the queue asked about, as always.
	Place bool              `json:"place,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
	// Explain returns the trail (Trail in the answer): the ACLs consulted
	// in order and, with Place, the placement rules tried first.
	Explain bool `json:"explain,omitempty"`
	// Queues asks for every queue of the partition with what the user may
	// do there (Queues in the answer), as usher access lists them; it
	// takes no queue, action, placement or application.
	Queues bool `json:"queues,omitempty"`
}

// AccessApplication describes an application: its owner, its queue and
// its own ACLs in YARN syntax (absent: the partition's defaults apply).
type AccessApplication struct {
	ID        string  `json:"id"`
	Owner     string  `json:"owner"`
	Queue     string  `json:"queue"`
	ViewACL   *string `json:"viewACL,omitempty"`
	ModifyACL *string `json:"modifyACL,omitempty"`
}

// AccessRequirement is one thing an application decision needed (a move
// needs three) and whether it was met, and by what.
type AccessRequirement struct {
	Need  string `json:"need"`
	Queue string `json:"queue,omitempty"`
	Met   bool   `json:"met"`
	By    string `json:"by,omitempty"`
}

// AccessResponse is the answer of POST /v1/access.
type AccessResponse struct {
	Allowed   bool    `json:"allowed"`
	Reason    string  `json:"reason"`
	Partition string  `json:"partition"`
	Queue     string  `json:"queue"`
	Action    string  `json:"action"`
	User      string  `json:"user"`
	Groups    []Group `json:"groups"`
	// Lookup says how the groups were found when that was more than
	// asking the resolver for User (a namemapping rule's directory name,
	// a skipped user, a static override, an unknown user decided on its
	// given groups); absent in the plain case.
	Lookup *Lookup `json:"lookup,omitempty"`
	// DecidedBy is the ACL entry that allowed, absent when denied.
	DecidedBy *DecidedBy `json:"decidedBy,omitempty"`
	// Application, Owner and Requirements describe an application
	// decision.
	Application  string              `json:"application,omitempty"`
	Owner        string              `json:"owner,omitempty"`
	TargetQueue  string              `json:"targetQueue,omitempty"`
	Requirements []AccessRequirement `json:"requirements,omitempty"`
	// Placement is where placement put the application ("place": true).
	Placement *AccessPlacement `json:"placement,omitempty"`
	// Trail is how a queue decision or a placement was reached
	// ("explain": true): the same object usher explain -o json prints.
	Trail *Trail `json:"trail,omitempty"`
	// Queues is every queue of the partition, depth first, with the
	// user's rights ("queues": true): the list usher access -o json prints.
	Queues []QueueRights `json:"queues,omitempty"`
}

// AccessPlacement is the outcome of the placement rules.
type AccessPlacement struct {
	Placed bool `json:"placed"`
	// Queue is the queue placed in ("" when rejected); Create is true when
	// it does not exist yet and YuniKorn creates it on submission.
	Queue  string `json:"queue,omitempty"`
	Create bool   `json:"create,omitempty"`
	// Asked is the queue the application names, read as a path under
	// root, when placement put it in another (Queue); reason then says
	// why, rule by rule.
	Asked string `json:"asked,omitempty"`
	// Rule names the rule that placed, or the step that ended placement.
	Rule   string `json:"rule"`
	Reason string `json:"reason"`
	// Trail is every rule tried, in order ("explain": true).
	Trail []AccessPlacementStep `json:"trail,omitempty"`
}

// AccessPlacementStep is one rule tried.
type AccessPlacementStep struct {
	// Rule is the rule's number from 1, 0 for the root.default fallback.
	Rule     int    `json:"rule"`
	Describe string `json:"describe"`
	Outcome  string `json:"outcome"`
	Queue    string `json:"queue,omitempty"`
	Reason   string `json:"reason"`
}

// DecidedBy names the ACL entry that allowed a decision.
type DecidedBy struct {
	Queue string `json:"queue,omitempty"`
	ACL   string `json:"acl"`
	Kind  string `json:"kind"`
	Entry string `json:"entry"`
}
