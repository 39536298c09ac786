// Package impact compares two compiled queue policies and says who gains
// and who loses submit or admin rights, and where, before a configuration
// change goes live.
//
// Rules this package enforces:
//   - Rights are compared on the compiled policies, so a change counts
//     wherever it takes effect (inherited below, or everywhere for the
//     partition adminacl). A queue or partition on one side only grants
//     nothing on the other.
//   - The subjects are every user and group named in either policy, "*"
//     as everyone, and the caller's users with groups (ParseSubjects). A
//     named user is judged by user entries alone, a group by group
//     entries alone, a given subject as a decision judges it.
//   - A change of what "*" grants is reported once, for everyone, not for
//     each named user and group again; given subjects are always listed.
//   - A change is reported once, on the highest queue where it starts,
//     with the number of queues it applies to.
//   - Placement (DiffConfigs, or both sides' rules): for each partition in
//     both, a request naming no queue is placed by the old and new rules
//     for every subject; those placed elsewhere, or refused by one side,
//     are reported. It costs subjects times rules, never queues.
//   - The result is deterministic; rights cost time in proportion to the
//     ACL entries and the changes, not to queues times subjects.
package impact

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/policy"
)

// Kind says who a change is about.
type Kind string

const (
	Everyone     Kind = "everyone" // the wildcard "*"
	User         Kind = "user"
	Group        Kind = "group"
	GivenSubject Kind = "subject" // a user with groups given by the caller
)

// kinds are the kinds in report order.
var kinds = []Kind{Everyone, User, Group, GivenSubject}

// Status says whether a queue or partition exists in both policies.
type Status string

const (
	Both    Status = ""
	Added   Status = "added"   // in the new policy only
	Removed Status = "removed" // in the old policy only
)

// Change is one subject gaining or losing one right, starting at a queue.
type Change struct {
	Gained bool     `json:"gained"` // false for a loss
	Right  string   `json:"right"`  // submit or admin
	Kind   Kind     `json:"kind"`
	Name   string   `json:"name"`             // "*" for everyone
	Groups []string `json:"groups,omitempty"` // a given subject's
	// Queues is how many queues the change applies to, this one included.
	Queues int `json:"queues"`
}

// Subject renders who the change is about: everyone (*), user alice,
// group dev, or alice (groups dev,ops).
func (c Change) Subject() string {
	switch c.Kind {
	case Everyone:
		return "everyone (*)"
	case GivenSubject:
		if len(c.Groups) == 0 {
			return c.Name + " (no groups)"
		}
		return c.Name + " (groups " + strings.Join(c.Groups, ",") + ")"
	}
	return string(c.Kind) + " " + c.Name
}

func (c Change) sign() string {
	if c.Gained {
		return "+"
	}
	return "-"
}

// QueueDiff is the changes that start at one queue.
type QueueDiff struct {
	Queue   string   `json:"queue"`
	Status  Status   `json:"status,omitempty"`
	Below   int      `json:"below"` // queues under this one, in either policy
	Changes []Change `json:"changes"`
}

// PartitionDiff is the changes of one partition. Queues lists only queues
// where some change starts.
type PartitionDiff struct {
	Name   string      `json:"name"`
	Status Status      `json:"status,omitempty"`
	Queues []QueueDiff `json:"queues"`
	// Placement lists the subjects placed differently.
	Placement []PlacementChange `json:"placement,omitempty"`
}

// Result is the whole comparison.
type Result struct {
	// Old and New name the two policies (file names), set by the caller.
	Old        string            `json:"old,omitempty"`
	New        string            `json:"new,omitempty"`
	Partitions []PartitionDiff   `json:"partitions"` // those with changes
	Gained     int               `json:"gained"`
	Lost       int               `json:"lost"`
	Placements int               `json:"placements"`
	Tags       map[string]string `json:"tags,omitempty"` // Options.Tags
}

// Changed reports whether any right or placement changes.
func (r *Result) Changed() bool { return r.Gained+r.Lost+r.Placements > 0 }

// Options tune a comparison. The zero value compares the named users and
// groups and everyone.
type Options struct {
	Subjects []Subject         // users with their groups to compare as well
	Tags     map[string]string // of every placed request
}

// diff compares rights, and placement where the configurations oc and nc
// both have the partition.
func diff(old, new *policy.Snapshot, oc, nc *config.Config, opts Options) *Result {
	res := &Result{Partitions: []PartitionDiff{}, Tags: opts.Tags}
	var names []string // old's partitions, then those only new has
	for _, s := range []*policy.Snapshot{old, new} {
		if s == nil {
			continue
		}
		for _, n := range s.Partitions() {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	for _, name := range names {
		po, pn := partition(old, name), partition(new, name)
		d, keys := diffPartition(po, pn, opts.Subjects)
		if po != nil && pn != nil {
			if ro, rn := rulesOf(oc, name), rulesOf(nc, name); ro != nil && rn != nil {
				if pc := diffPlacement(po, pn, ro, rn, keys, opts.Tags); len(pc) > 0 {
					d.Placement = pc
					res.Placements += len(pc)
				}
			}
		}
		if len(d.Queues) == 0 && len(d.Placement) == 0 {
			continue
		}
		d.Name = name
		switch {
		case po == nil:
			d.Status = Added
		case pn == nil:
			d.Status = Removed
		}
		for _, q := range d.Queues {
			for _, c := range q.Changes {
				if c.Gained {
					res.Gained++
				} else {
					res.Lost++
				}
			}
		}
		res.Partitions = append(res.Partitions, d)
	}
	return res
}

func partition(s *policy.Snapshot, name string) *policy.CompiledPartition {
	if s == nil {
		return nil
	}
	p, _ := s.Partition(name) // nil when there is no such partition
	return p
}

func sortChanges(cs []Change) {
	slices.SortFunc(cs, func(a, b Change) int {
		return cmp.Or(cmp.Compare(b.Right, a.Right), // submit before admin
			cmp.Compare(slices.Index(kinds, a.Kind), slices.Index(kinds, b.Kind)),
			cmp.Compare(a.Name, b.Name), slices.Compare(a.Groups, b.Groups),
			cmp.Compare(b.sign(), a.sign())) // losses before gains
	})
}

// ChangeAt is a change with the partition and queue where it starts.
type ChangeAt struct {
	Partition string `json:"partition"`
	Queue     string `json:"queue"`
	Change
}

func (c ChangeAt) String() string {
	s := fmt.Sprintf("%s%s %s on %s/%s", c.sign(), c.Right, c.Subject(), c.Partition, c.Queue)
	if c.Queues > 1 {
		s += fmt.Sprintf(" (%d queues)", c.Queues)
	}
	return s
}

// Summary is a short account of a comparison, for a log line and a metric.
type Summary struct {
	Gained, Lost int
	Placements   int        // subjects placed differently
	Queues       int        // queues where some change starts
	First        []ChangeAt // the first changes in report order
}

// Summarize compares old and new as DiffConfigs does and keeps the counts
// and the first max changes, for the log of a reload.
func Summarize(old, new *config.Config, max int) Summary {
	r := DiffConfigs(old, new, Options{})
	s := Summary{Gained: r.Gained, Lost: r.Lost, Placements: r.Placements}
	for _, p := range r.Partitions {
		s.Queues += len(p.Queues)
		for _, q := range p.Queues {
			for _, c := range q.Changes {
				if len(s.First) < max {
					s.First = append(s.First, ChangeAt{Partition: p.Name, Queue: q.Queue, Change: c})
				}
			}
		}
	}
	return s
}

// LogValue makes a Summary a structured log attribute.
func (s Summary) LogValue() slog.Value {
	attrs := []slog.Attr{slog.Int("gained", s.Gained), slog.Int("lost", s.Lost), slog.Int("queues", s.Queues), slog.Int("placements", s.Placements)}
	if len(s.First) > 0 {
		first := make([]string, len(s.First))
		for i, c := range s.First {
			first[i] = c.String()
		}
		attrs = append(attrs, slog.Any("first", first))
	}
	return slog.GroupValue(attrs...)
}
