package policy

import "github.com/usherhq/usher/acl"

// QueueInfo is one queue of a compiled partition as configured: its own
// ACLs, not the inherited ones. Tools that compare configurations (the
// impact diff) walk these.
type QueueInfo struct {
	Path      string // canonical (lower case): root.a.b
	Parent    string // "" for root
	SubmitACL *acl.ACL
	AdminACL  *acl.ACL
}

// Tree returns every queue of the partition with its own ACLs, depth
// first in configured order: a parent before its children.
func (p *CompiledPartition) Tree() []QueueInfo {
	out := make([]QueueInfo, len(p.order))
	for i, q := range p.order {
		out[i] = QueueInfo{Path: q.path, SubmitACL: q.spec.SubmitACL, AdminACL: q.spec.AdminACL}
		if q.parent != nil {
			out[i].Parent = q.parent.path
		}
	}
	return out
}

// AdminACL returns the partition's admin ACL (admin of every queue), nil
// when not set.
func (p *CompiledPartition) AdminACL() *acl.ACL { return p.clusterAdmin }
