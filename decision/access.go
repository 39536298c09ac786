package decision

// AccessRequest is the body of POST /v1/access, shared by the server and
// kubectl-usher so that no copy drifts. Without Application it asks about
// a queue (action submit or admin); with it, about a running application
// (action view, modify, kill or move, with TargetQueue for a move).
type AccessRequest struct {
	Partition   string             `json:"partition,omitempty"`
	Queue       string             `json:"queue,omitempty"`
	User        string             `json:"user"`
	Groups      []string           `json:"groups,omitempty"`
	Action      string             `json:"action,omitempty"`
	Application *AccessApplication `json:"application,omitempty"`
	TargetQueue string             `json:"targetQueue,omitempty"`
	// Place runs the placement rules, Queue being the queue the application
	// names and Tags its tags; the decision is submit on the queue placed in.
	Place bool              `json:"place,omitempty"`
	Tags  map[string]string `json:"tags,omitempty"`
	// Explain returns the trail; the answer is then explain's, else check's.
	Explain bool `json:"explain,omitempty"`
	// Queues asks for every queue with the user's rights, as usher access
	// lists them; it takes no queue, action, placement or application.
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
