package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/policy"
)

// references reports what the admission settings name that the partitions
// lack; raw is before defaults, so a default partition counts only when a
// check uses it. Each would deny every workload it applies to: an error.
func (l locator) references(raw settings.Config, snap *policy.Snapshot) {
	c := raw.Defaulted()
	item := func(setting string, index int, field, format string, args ...any) {
		l.err(&settings.SettingError{Setting: "admissionController." + setting, Index: index, Field: field,
			Msg: fmt.Sprintf(format, args...)}, "")
	}
	add := func(setting, format string, args ...any) { item(setting, -1, "", format, args...) }
	part, err := snap.Partition(c.Partition)
	if err != nil {
		names := strings.Join(snap.Partitions(), ", ")
		switch {
		case raw.Partition != "":
			add("partition", "%q names no partition of this configuration (partitions: %s)", raw.Partition, names)
		case c.EnforceQueueACLs || c.EnforceDeleteACLs:
			check := "enforceQueueACLs"
			if !c.EnforceQueueACLs {
				check = "enforceDeleteACLs"
			}
			// Reported at the check: the default partition is not written.
			l.err(&settings.SettingError{Setting: "admissionController.partition", Index: -1, Msg: fmt.Sprintf(
				"%q (the default) names no partition of this configuration (partitions: %s); %s needs one: set admissionController.partition",
				c.Partition, names, check)}, "admissionController."+check)
		}
		return // the queues below are in no partition
	}
	pname := part.Name()
	template := func(add func(format string, args ...any), t string) {
		if t == "" {
			return
		}
		lit, _, hasPlaceholder := strings.Cut(t, "{")
		if !hasPlaceholder {
			if !part.Has(policy.NormalizeQueue(lit)) {
				add("%q is not a queue of partition %s", t, pname)
			}
			return
		}
		// The complete names before the first placeholder are fixed: the
		// queue must lie under them.
		dot := strings.LastIndexByte(lit, '.')
		first, _, _ := strings.Cut(lit, ".")
		switch {
		case dot < 0 && !strings.HasPrefix(policy.RootQueue, strings.ToLower(lit)),
			dot >= 0 && !strings.EqualFold(first, policy.RootQueue):
			add("%q never expands to a queue path: a queue path starts with %s", t, policy.RootQueue)
		case dot > 0:
			parent := policy.NormalizeQueue(lit[:dot])
			if !part.Has(parent) {
				add("%q can only name queues under %s, which is not a queue of partition %s", t, parent, pname)
			} else if !slices.ContainsFunc(part.Queues(), func(q string) bool { return strings.HasPrefix(q, parent+".") }) {
				add("%q can only name queues under %s, which has no child queues in partition %s", t, parent, pname)
			}
		}
	}
	schedulers := map[string]bool{}
	for i, s := range c.QueueSources {
		schedulers[s.Scheduler] = true
		template(func(format string, args ...any) { item("queueSources", i, "template", format, args...) }, s.Template)
	}
	template(func(format string, args ...any) { add("queueMapping.template", format, args...) }, c.QueueMapping.Template)
	for i, e := range c.QueueMapping.Table {
		if e.Scheduler != "" && !schedulers[e.Scheduler] {
			item("queueMapping.table", i, "scheduler", "%q is the scheduler of no queue source, so this entry is never used (schedulers of queueSources: %s)",
				e.Scheduler, strings.Join(slices.Sorted(maps.Keys(schedulers)), ", "))
		}
		if e.Queue != "" && !part.Has(policy.NormalizeQueue(e.Queue)) {
			item("queueMapping.table", i, "queue", "%q is not a queue of partition %s", e.Queue, pname)
		}
	}
}
