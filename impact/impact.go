// Package impact compares two compiled queue policies and says who gains
// and who loses submit or admin rights, and where, before a configuration
// change goes live.
//
// Rules this package enforces:
//   - Rights are compared on the compiled policies, so a change counts
//     wherever it takes effect: on the queue whose ACL changed, on every
//     queue below it that inherits it, and on every queue of the partition
//     when the partition's admin ACL changed. A queue (or a partition)
//     present in only one of the two policies counts as granting nothing
//     in the other.
//   - The subjects compared are every user and every group named in an
//     ACL of either policy, the wildcard "*" as "everyone", and optionally
//     users with their groups given by the caller (see ParseSubjects). A
//     named user is judged by its user entries alone and a named group by
//     its group entries alone; a given subject is judged as a decision
//     judges it, by user, groups and wildcard together.
//   - Where what "*" grants changes, the change is reported once, for
//     everyone; the named users and groups whose rights change with it are
//     not listed again. Given subjects are always listed.
//   - A change is reported once, on the highest queue where it starts, with
//     the number of queues it applies to (that queue and the queues below
//     it that inherit the same change). A queue below where the change
//     does not hold, because the subject had the right there already, is
//     not counted.
//   - Placement (DiffConfigs, or Diff given both sides' rules): for every
//     partition in both, a request that names no queue (with the tags
//     given) is placed by the old and the new rules for everyone, every
//     named user (without groups), a member of every named group and the
//     given subjects; those placed in another queue, or placed by one
//     side and rejected by the other, are reported. It costs subjects
//     times rules, never queues.
//   - The result is deterministic: partitions and queues in configured
//     order (the new policy's queues after the old one's), changes sorted
//     by right, kind and name.
//
// The comparison costs time in proportion to the ACL entries of both
// policies and the changes found, not to queues times subjects.
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
	// Everyone is the wildcard "*".
	Everyone Kind = "everyone"
	// User is a user named in an ACL, judged by user entries alone.
	User Kind = "user"
	// Group is a group named in an ACL: any member of it, judged by group
	// entries alone.
	Group Kind = "group"
	// GivenSubject is a user with groups given by the caller, judged as a
	// decision judges it.
	GivenSubject Kind = "subject"
)

func kindOrder(k Kind) int {
	switch k {
	case Everyone:
		return 0
	case User:
		return 1
	case Group:
		return 2
	}
	return 3
}

// Status says whether a queue or partition exists in both policies.
type Status string

const (
	// Both means present in the old and the new policy.
	Both Status = ""
	// Added means present in the new policy only.
	Added Status = "added"
	// Removed means present in the old policy only.
	Removed Status = "removed"
)

// Change is one subject gaining or losing one right, starting at a queue.
type Change struct {
	// Gained is true for a gain, false for a loss.
	Gained bool `json:"gained"`
	// Right is submit or admin.
	Right string `json:"right"`
	Kind  Kind   `json:"kind"`
	// Name is the user or group name, "*" for everyone.
	Name string `json:"name"`
	// Groups are a given subject's groups.
	Groups []string `json:"groups,omitempty"`
	// Queues is how many queues the change applies to: the queue it is
	// reported on and those below it that inherit it.
	Queues int `json:"queues"`
}

// Subject renders who the change is about: everyone (*), user alice,
// group dev, or alice (groups dev,ops) for a given subject.
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
	Queue  string `json:"queue"`
	Status Status `json:"status,omitempty"`
	// Below is the number of queues under this one (in either policy).
	Below   int      `json:"below"`
	Changes []Change `json:"changes"`
}

// PartitionDiff is the changes of one partition. Queues lists only queues
// where some change starts.
type PartitionDiff struct {
	Name   string      `json:"name"`
	Status Status      `json:"status,omitempty"`
	Queues []QueueDiff `json:"queues"`
	// Placement lists the subjects whose request that names no queue is
	// placed differently (compared when Options has the rules of both
	// sides, for partitions in both). Absent when none is.
	Placement []PlacementChange `json:"placement,omitempty"`
}

// Result is the whole comparison.
type Result struct {
	// Old and New name the two policies (file names), for the reader; Diff
	// leaves them empty.
	Old string `json:"old,omitempty"`
	New string `json:"new,omitempty"`
	// Partitions lists only partitions with changes.
	Partitions []PartitionDiff `json:"partitions"`
	// Gained and Lost count the changes reported.
	Gained int `json:"gained"`
	Lost   int `json:"lost"`
	// Placements counts the placement changes reported.
	Placements int `json:"placements"`
	// Tags are the tags every placed request had (Options.Tags).
	Tags map[string]string `json:"tags,omitempty"`
}

// Changed reports whether any right or placement changes.
func (r *Result) Changed() bool { return r.Gained+r.Lost+r.Placements > 0 }

// Options tune a comparison. The zero value compares the named users and
// groups and everyone.
type Options struct {
	// Subjects are users with their groups to compare as well.
	Subjects []Subject
	// OldRules and NewRules give each side's placement rules by
	// partition (see RulesOf, DiffConfigs). When both are set, every
	// partition in both policies gets a placement section: where a
	// request that names no queue goes, for every subject compared.
	OldRules, NewRules RulesFunc
	// Tags are the tags of every placed request (for tag rules).
	Tags map[string]string
}

// Diff compares the old and the new policy. Either may be nil, meaning a
// policy with no partitions.
func Diff(old, new *policy.Snapshot, opts Options) *Result {
	res := &Result{Partitions: []PartitionDiff{}, Tags: opts.Tags}
	names := []string{}
	seen := map[string]bool{}
	for _, s := range []*policy.Snapshot{old, new} {
		if s == nil {
			continue
		}
		for _, n := range s.Partitions() {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	for _, name := range names {
		po, pn := partition(old, name), partition(new, name)
		d, keys := diffPartition(po, pn, opts.Subjects)
		if po != nil && pn != nil && opts.OldRules != nil && opts.NewRules != nil {
			ro, rn := opts.OldRules(name), opts.NewRules(name)
			if ro != nil && rn != nil {
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
	p, err := s.Partition(name)
	if err != nil {
		return nil
	}
	return p
}

func sortChanges(cs []Change) {
	slices.SortFunc(cs, func(a, b Change) int {
		if c := cmp.Compare(b.Right, a.Right); c != 0 { // submit before admin
			return c
		}
		if c := cmp.Compare(kindOrder(a.Kind), kindOrder(b.Kind)); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		if c := slices.Compare(a.Groups, b.Groups); c != 0 {
			return c
		}
		if a.Gained != b.Gained {
			if a.Gained {
				return 1
			}
			return -1
		}
		return 0
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

// Summary is a short account of a comparison, for a log line and a
// metric.
type Summary struct {
	Gained, Lost int
	// Placements is the number of subjects placed differently.
	Placements int
	// Queues is the number of queues where some change starts.
	Queues int
	// First holds the first changes in report order, at most the number
	// asked for.
	First []ChangeAt
}

// Summarize compares old and new as DiffConfigs does, without given
// subjects or tags, and keeps the counts and the first max changes of
// rights. It is what a server logs on a reload.
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

// String renders the summary as one line: "no access changes" or
// "access changes: 3 gained, 1 lost in 2 queues; +submit user bob on
// default/root.a, …".
func (s Summary) String() string {
	if s.Gained+s.Lost == 0 {
		if s.Placements > 0 {
			return "no access changes; " + plural(s.Placements, "placement") + " changed"
		}
		return "no access changes"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "access changes: %d gained, %d lost in %d queues", s.Gained, s.Lost, s.Queues)
	if s.Placements > 0 {
		b.WriteString(", " + plural(s.Placements, "placement") + " changed")
	}
	for i, c := range s.First {
		if i == 0 {
			b.WriteString("; ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(c.String())
	}
	if n := s.Gained + s.Lost - len(s.First); n > 0 && len(s.First) > 0 {
		fmt.Fprintf(&b, ", and %d more", n)
	}
	return b.String()
}

// LogValue makes a Summary a structured log attribute: gained, lost,
// queues and, when there are changes, first (the first changes as
// strings).
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
