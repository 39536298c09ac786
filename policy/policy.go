// Package policy compiles queue ACLs into immutable snapshots and decides
// who may submit to and administer each queue.
//
// Rules this package enforces:
//   - A partition holds a tree of queues rooted at "root". Queue names are
//     matched without regard to case, as YuniKorn does; paths are written
//     root.a.b.
//   - Submit is allowed when the submit ACL or the admin ACL of the queue or
//     of any ancestor allows the user, checked bottom-up to root, the
//     queue's submit ACL before its admin ACL. Admin is allowed by admin
//     ACLs only, likewise bottom-up. The partition's admin ACL (YARN's
//     yarn.admin.acl) is checked last and grants both everywhere.
//   - A queue with no ACL set grants nothing by itself. There are no deny
//     entries; the zero Decision denies.
//   - Nothing a queue inherits is copied: compiling costs the queues and
//     their own entries, and a decision walks the queue's chain, without
//     allocating.
//
// A Snapshot is immutable and safe for concurrent use; a new configuration
// is a new Snapshot.
package policy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/usherhq/usher/acl"
)

const (
	RootQueue        = "root"    // every partition's root queue
	DefaultPartition = "default" // used when a request names none
)

// Action is what a user wants to do on a queue.
type Action int

const (
	Submit Action = iota // adding an application to a queue
	Admin                // administering a queue and its applications (killing them)
)

func (a Action) String() string {
	if a == Admin {
		return "admin"
	}
	return "submit"
}

// ParseAction parses "submit" or "admin"; "" is Submit.
func ParseAction(s string) (Action, error) {
	switch s {
	case "", "submit":
		return Submit, nil
	case "admin":
		return Admin, nil
	}
	return 0, fmt.Errorf("unknown action %q: want submit or admin", s)
}

// Queue is a queue of a partition as configured. ACLs that are not set are
// nil.
type Queue struct {
	Name      string
	SubmitACL *acl.ACL
	AdminACL  *acl.ACL
	Children  []*Queue
	// Parent marks a queue as a parent even when it has no children yet
	// (YuniKorn's parent: true): placement may create queues under it,
	// and it is not a leaf.
	Parent bool
}

// Partition is a partition as configured.
type Partition struct {
	Name     string
	Root     *Queue
	AdminACL *acl.ACL // admins of every queue, as YARN's yarn.admin.acl
	// DefaultQueue is used when a request names none; "" is root.default
	// when that queue exists, else root.
	DefaultQueue string
}

// ACLName names which ACL of a queue decided.
type ACLName string

const (
	SubmitACL       ACLName = "submitacl"          // a queue's
	AdminACL        ACLName = "adminacl"           // a queue's
	ClusterAdminACL ACLName = "partition adminacl" // the partition's
)

// Origin is one ACL in check order: which queue, which of its ACLs.
type Origin struct {
	Queue string
	ACL   ACLName
	Rule  *acl.ACL // nil when not set
}

// Grant is the entry that allowed a decision.
type Grant struct {
	Origin
	Match acl.Match
}

// Describe renders the grant for a message: `user entry "bob" in
// submitacl of root.a`, or in the adminacl of partition.
func (g Grant) Describe(partition string) string {
	if g.ACL == ClusterAdminACL {
		return fmt.Sprintf("%s in the adminacl of partition %s", Entry(g.Match), partition)
	}
	return fmt.Sprintf("%s in %s of %s", Entry(g.Match), g.ACL, g.Queue)
}

// Entry describes the ACL entry of a match: the wildcard, a user or a
// group entry.
func Entry(m acl.Match) string {
	switch m.Kind {
	case acl.MatchWildcard:
		return `the wildcard "*"`
	case acl.MatchUser:
		return fmt.Sprintf("user entry %q", m.Name)
	default:
		return fmt.Sprintf("group entry %q", m.Name)
	}
}

// Decision is the answer to "may this user do this action on this queue".
// The zero value denies.
type Decision struct {
	Allowed   bool
	Partition string
	Queue     string
	Action    Action
	User      string
	By        Grant // the ACL entry that allowed the action; zero when denied
}

// Reason renders the decision as one sentence.
func (d Decision) Reason() string {
	if d.Allowed {
		return fmt.Sprintf("%s may %s %s: %s", Name(d.User), d.Action.verb(), d.Queue, d.By.Describe(d.Partition))
	}
	acls := "submitacl or adminacl"
	if d.Action == Admin {
		acls = "adminacl"
	}
	return fmt.Sprintf("%s may not %s %s: no %s of %s or its parents allows the user or any of the user's groups",
		Name(d.User), d.Action.verb(), d.Queue, acls, d.Queue)
}

// Name renders a user or group name for a message: as it is when it is
// written plainly (letters, digits and . _ - @ : / # + = $), else quoted, so
// that a name a requester chose (a forged admission review's) cannot pass
// for words of the message.
func Name(s string) string {
	if s == "" || strings.ContainsFunc(s, func(c rune) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("._-@:/#+=$", c))
	}) {
		return strconv.Quote(s)
	}
	return s
}

func (a Action) verb() string {
	if a == Admin {
		return "administer"
	}
	return "submit to"
}

// ErrUnknownPartition and ErrUnknownQueue are wrapped by the errors of
// lookups that name something the configuration does not have.
var (
	ErrUnknownPartition = errors.New("unknown partition")
	ErrUnknownQueue     = errors.New("unknown queue")
)

// NormalizeQueue lower-cases a queue path; strings.ToLower does not
// allocate for a path that is lower case already.
func NormalizeQueue(path string) string { return strings.ToLower(path) }
