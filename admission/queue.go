package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
)

// This file holds queue targeting: which queues an object's pods will run
// in, read from the markers of every configured queue source, and the
// QueueAuthorizer check of each (enforceQueueACLs).

// target is one queue an object asks for, and where that was read.
type target struct {
	queue  string
	src    *compiledSource
	level  string
	value  string
	marker bool
	// For the default queue: the pod-level scheduler that finds none of
	// its markers on the pods ("" when no marker at all names a queue).
	scheduler string
}

func (t *target) describe(partition string) string {
	if !t.marker {
		if t.scheduler != "" {
			return fmt.Sprintf("the default queue of partition %q (the %s carries no %s queue marker, so %s runs its pods there)",
				partition, t.level, t.scheduler, t.scheduler)
		}
		return fmt.Sprintf("the default queue of partition %q (no queue marker on the %s)", partition, t.level)
	}
	return fmt.Sprintf("queue %q of partition %q (%s %s=%q on the %s, read for %s)",
		t.queue, partition, t.src.Kind, t.src.Key, t.value, t.level, t.src.Scheduler)
}

// targets lists the distinct queues the object's pods may run in, as the
// schedulers will see them: the pod (or pod template) first, then a
// CronJob's job template, then the workload itself.
//
// A pod-level source (QueueSource.Level) is read on the pod or pod
// template only: its scheduler ignores the same marker on the workload, so
// a workload labelled for a queue only at the top runs its pods in the
// default queue. Workload-level sources are read at every level. Every
// marker counts: a workload labelled for an allowed queue for one scheduler
// and a forbidden one for another is denied, because usher cannot know
// which scheduler will act. The default queue ("") is a target when a
// pod-level scheduler finds none of its markers on the pods, and when no
// marker at all names a queue.
func (c *Compiled) targets(k *kindInfo, ns string, o *objectView, dst []target) ([]target, error) {
	type level struct {
		m    *metaView
		name string
	}
	var levels [3]level
	n := 0
	levels[n] = level{o.pod(), k.where}
	n++
	if k.layout == layoutCronJob {
		levels[n] = level{&o.job, "job template"}
		n++
	}
	if k.layout != layoutPod {
		levels[n] = level{&o.top, k.kind}
		n++
	}
	var onPods uint32 // bit i: source i has a marker on the pods
	for li, l := range levels[:n] {
		for i := range c.sources {
			src := &c.sources[i]
			if src.podLevel && li > 0 {
				continue // not read by its scheduler
			}
			v := l.m.vals[slotMarkers+i]
			if !l.m.has(slotMarkers+i) || v == "" {
				continue
			}
			if li == 0 {
				onPods |= 1 << i
			}
			q, err := c.mapQueue(src, v, ns)
			if err != nil {
				return nil, fmt.Errorf("%s %s=%q on the %s maps to no queue: %w", src.Kind, src.Key, v, l.name, err)
			}
			dup := false
			for j := range dst {
				if dst[j].queue == q {
					dup = true
					break
				}
			}
			if !dup {
				dst = append(dst, target{queue: q, src: src, level: l.name, value: v, marker: true})
			}
		}
	}
	if sched := c.unmarkedPodScheduler(onPods); sched != "" || len(dst) == 0 {
		for j := range dst {
			if dst[j].queue == "" {
				return dst, nil
			}
		}
		where := k.where
		if k.layout == layoutPod {
			where = "pod"
		}
		if sched == "" && k.layout != layoutPod {
			where = k.kind
		}
		dst = append(dst, target{level: where, scheduler: sched})
	}
	return dst, nil
}

// unmarkedPodScheduler returns the first pod-level scheduler none of whose
// sources has a marker on the pods (onPods: bit i set when source i has),
// or "".
func (c *Compiled) unmarkedPodScheduler(onPods uint32) string {
	for i := range c.sources {
		if !c.sources[i].podLevel {
			continue
		}
		marked := false
		for j := range c.sources {
			if c.sources[j].podLevel && c.sources[j].Scheduler == c.sources[i].Scheduler && onPods&(1<<j) != 0 {
				marked = true
				break
			}
		}
		if !marked {
			return c.sources[i].Scheduler
		}
	}
	return ""
}

// checkQueues authorizes id for every queue the object asks for; on UPDATE
// (old != nil) only for queues the old object did not already ask for. It
// returns the first queue checked, or a denial.
//
// Objects a controller makes are checked like any other, under the
// identity stamped on them: a Deployment's pods that carry no marker run
// in the default queue, whatever the Deployment's own labels say.
func checkQueues(ctx context.Context, st *handlerState, k *kindInfo, req *admissionv1.AdmissionRequest, nv, ov *objectView, id identity) (string, *decision) {
	c := st.cfg
	ns := req.Namespace
	var arr [4]target
	ts, err := c.targets(k, ns, nv, arr[:0])
	if err != nil {
		dc := deny(httpStatusBadRequest, "usher: %s %s: %v", k.kind, objectName(req, nv), err)
		return "", &dc
	}
	if ov != nil {
		var oldArr [4]target
		olds, err := c.targets(k, ns, ov, oldArr[:0])
		if err == nil {
			kept := ts[:0]
			for _, t := range ts {
				seen := false
				for _, o := range olds {
					if o.queue == t.queue {
						seen = true
						break
					}
				}
				if !seen {
					kept = append(kept, t)
				}
			}
			ts = kept
		}
		if len(ts) == 0 {
			return "", nil
		}
	}
	if st.authz == nil {
		dc := deny(httpStatusInternal, errNoAuthorizerMessage)
		return "", &dc
	}
	for i := range ts {
		t := &ts[i]
		ok, reason, err := st.authz.AuthorizeSubmit(ctx, SubmitRequest{Partition: c.partition, Queue: t.queue, User: id.user, Groups: id.groups})
		if err != nil {
			dc := deny(httpStatusInternal, "usher: cannot decide whether user %q may submit to %s: %v; denied (usher fails closed)",
				id.user, t.describe(c.partition), err)
			dc.queue = recordQueue(t.queue)
			return "", &dc
		}
		if !ok {
			if reason == "" {
				reason = "no ACL allows it"
			}
			dc := deny(httpStatusForbidden, "usher: user %q may not submit to %s: %s", id.user, t.describe(c.partition), reason)
			dc.queue = recordQueue(t.queue)
			return "", &dc
		}
	}
	return recordQueue(ts[0].queue), nil
}

func recordQueue(q string) string {
	if q == "" {
		return defaultQueueInRecord
	}
	return q
}
