package decision

// The wire format of usher's decision API, POST /v1/access: what a client
// sends (AccessRequest), and what usher serve answers (Output, the object
// the command asking the same question prints). The server (package
// server) and the kubectl plugin (kubectl-usher) share these types, so
// that the plugin neither links the server nor keeps a copy that drifts
// from it.

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
	// in order and, with Place, the placement rules tried first; the
	// answer is then explain's, else check's.
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

// DecidedBy names the ACL entry that allowed a decision.
type DecidedBy struct {
	Queue string `json:"queue,omitempty"`
	ACL   string `json:"acl"`
	Kind  string `json:"kind"`
	Entry string `json:"entry"`
}
