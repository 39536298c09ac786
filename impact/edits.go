package impact

import (
	"cmp"
	"reflect"
	"strings"

	"github.com/usherhq/usher/config"
)

// Edit is one change between two configurations that delegated
// administration authorizes (docs/delegated-administration.md).
type Edit struct {
	Partition string // "" for the admission settings
	Queue     string // the queue added, removed or changed; "" for a partition
	Status    Status // of the queue or partition; Both: its own settings changed
	// Admin is the queue of the old configuration whose admins may make
	// the change: a new queue's nearest ancestor, else the parent; "" for
	// the partition's adminacl.
	Admin string
}

func (e Edit) String() string {
	what := "partition " + e.Partition
	switch {
	case e.Queue != "":
		what = "queue " + e.Partition + "/" + e.Queue
	case e.Partition == "":
		what = "the admission settings or the ConfigMap's other keys"
	}
	return cmp.Or(string(e.Status), "changes") + " " + what
}

// Edits lists the admission settings and the ConfigMap's other keys (as
// one) when they changed, the partitions
// and queues added or removed (of a subtree, its top only) and those
// whose own YAML (config.Digests) changed.
func Edits(old, new *config.Config) []Edit {
	var out []Edit
	if !reflect.DeepEqual(old.Admission.Config(), new.Admission.Config()) || old.Digests[""] != new.Digests[""] {
		out = append(out, Edit{Status: Both})
	}
	for _, name := range new.Snapshot.Partitions() {
		if partition(old.Snapshot, name) == nil {
			out = append(out, Edit{Partition: name, Status: Added})
		}
	}
	for _, name := range old.Snapshot.Partitions() {
		po, pn := partition(old.Snapshot, name), partition(new.Snapshot, name)
		if pn == nil {
			out = append(out, Edit{Partition: name, Status: Removed})
			continue
		}
		key := strings.ToLower(name) + "/"
		if old.Digests[key[:len(key)-1]] != new.Digests[key[:len(key)-1]] {
			out = append(out, Edit{Partition: name, Status: Both})
		}
		for _, q := range pn.Queues() {
			switch parent := parentPath(q); {
			case !po.Has(q) && po.Has(parent):
				out = append(out, Edit{Partition: name, Queue: q, Status: Added, Admin: parent})
			case po.Has(q) && old.Digests[key+q] != new.Digests[key+q]:
				out = append(out, Edit{Partition: name, Queue: q, Status: Both, Admin: parent})
			}
		}
		for _, q := range po.Queues() {
			if parent := parentPath(q); !pn.Has(q) && pn.Has(parent) {
				out = append(out, Edit{Partition: name, Queue: q, Status: Removed, Admin: parent})
			}
		}
	}
	return out
}

// parentPath is the path of q's parent queue, "" for root.
func parentPath(q string) string {
	return q[:max(strings.LastIndexByte(q, '.'), 0)]
}
