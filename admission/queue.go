package admission

import (
	"context"
	"fmt"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
)

// This file holds queue targeting: which queues an object's pods will run
// in, read from the markers of every configured queue source, and the
// QueueAuthorizer check of each (enforceQueueACLs).

// target is one queue an object asks for, and where that was read.
type target struct {
	queue  string
	src    *settings.Source
	level  string
	value  string
	marker bool
	// For the default queue: the pod-level scheduler that finds none of
	// its markers on the pods ("" when no marker at all names a queue).
	scheduler string
	// place: YuniKorn's placement rules decide the queue; queue is then
	// the marker's value unchanged ("" for none), the provided rule's
	// input.
	place bool
}

// same reports whether t asks the same question as o.
func (t *target) same(o *target) bool { return t.queue == o.queue && t.place == o.place }

func (t *target) describe(partition string) string {
	if t.place && t.marker {
		return fmt.Sprintf("queue %s of partition %q (%s %s=%s on the %s, read for %s, whose placement rules choose the queue)",
			errString(providedQueue(t.queue)), partition, t.src.Kind, t.src.Key, errString(t.value), t.level, t.src.Scheduler)
	}
	if !t.marker {
		if t.scheduler != "" {
			return fmt.Sprintf("the default queue of partition %q (the %s carries no %s queue marker, so %s runs its pods there)",
				partition, t.level, t.scheduler, t.scheduler)
		}
		return fmt.Sprintf("the default queue of partition %q (no queue marker on the %s)", partition, t.level)
	}
	return fmt.Sprintf("queue %s of partition %q (%s %s=%s on the %s, read for %s)",
		errString(t.queue), partition, t.src.Kind, t.src.Key, errString(t.value), t.level, t.src.Scheduler)
}

// record is the queue of the audit record: the queue checked, or for a
// placement the queue the marker names as YuniKorn's provided rule
// qualifies it (the placement rules may choose another).
func (t *target) record() string {
	if t.place {
		return recordQueue(providedQueue(t.queue))
	}
	return recordQueue(t.queue)
}

// field is the object's field that holds t's marker, as Kubernetes
// writes field paths ("spec.template.metadata.labels[queue]"), or "" for
// the default queue (no marker).
func (t *target) field(k *kindInfo) string {
	if !t.marker {
		return ""
	}
	meta := "metadata"
	switch t.level {
	case k.where:
		meta = fieldPath(k.metaPath)
	case "job template":
		meta = "spec.jobTemplate.metadata"
	}
	m := ".labels["
	if t.src.Annotation {
		m = ".annotations["
	}
	return meta + m + t.src.Key + "]"
}

// fieldPath turns a JSON pointer without escapes ("/spec/template/metadata")
// into a field path ("spec.template.metadata").
func fieldPath(pointer string) string {
	return strings.ReplaceAll(strings.TrimPrefix(pointer, "/"), "/", ".")
}

// userInfoDenial sets the field of a denial about the user.info
// annotation of an object of kind k.
func userInfoDenial(k *kindInfo, dc decision) decision {
	dc.field = fieldPath(k.annotationsPath) + "[" + UserInfoAnnotation + "]"
	return dc
}

// providedQueue is the queue a YuniKorn marker names, as YuniKorn's
// provided rule qualifies it: a value that is not "root" and does not
// start with "root." has each '.' replaced by "_dot_" and goes under root
// (so "ml.training" names root.ml_dot_training, not root.ml.training);
// "" (no marker) stays "". Placement may still put the pod elsewhere.
func providedQueue(v string) string {
	if v == "" || v == "root" || strings.HasPrefix(v, "root.") {
		return v
	}
	return "root." + strings.ReplaceAll(v, ".", "_dot_")
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
//
// With placing (the queue check), YuniKorn's markers are left to its
// placement rules (target.place); without (the delete check), every
// marker is mapped.
func (c *compiled) targets(k *kindInfo, ns string, o *objectView, placing bool, dst []target) ([]target, error) {
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
	for li, l := range levels[:n] {
		for i := range c.Sources {
			src := &c.Sources[i]
			if src.PodLevel && li > 0 {
				continue // not read by its scheduler
			}
			v := l.m.val(slotMarkers + i)
			if !l.m.has(slotMarkers+i) || v == "" {
				continue
			}
			q, place, err := c.MapQueue(src, v, ns, placing)
			if err != nil {
				return nil, fmt.Errorf("%s %s=%s on the %s maps to no queue: %w", src.Kind, src.Key, errString(v), l.name, err)
			}
			dst = appendTarget(dst, target{queue: q, src: src, level: l.name, value: v, marker: true, place: place})
		}
	}
	if sched := c.unmarkedPodScheduler(o.pod()); sched != "" || len(dst) == 0 {
		where := k.where
		if k.layout == layoutPod {
			where = "pod"
		}
		if sched == "" && k.layout != layoutPod {
			where = k.kind
		}
		// YuniKorn places a pod without its marker too: the provided
		// rule misses and the other rules (or root.default) decide.
		dst = appendTarget(dst, target{level: where, scheduler: sched, place: placing && c.placeScheduler(sched)})
	}
	return dst, nil
}

// appendTarget appends t unless dst already asks the same question.
func appendTarget(dst []target, t target) []target {
	for j := range dst {
		if dst[j].same(&t) {
			return dst
		}
	}
	return append(dst, t)
}

// placeScheduler reports whether the queue of scheduler's pods comes from
// YuniKorn's placement rules.
func (c *compiled) placeScheduler(scheduler string) bool {
	return scheduler == settings.SchedulerYuniKorn
}

// unmarkedPodScheduler returns the first pod-level scheduler none of whose
// sources has a marker on the pods (pm), or "".
func (c *compiled) unmarkedPodScheduler(pm *metaView) string {
	for i := range c.Sources {
		if !c.Sources[i].PodLevel {
			continue
		}
		marked := false
		for j := range c.Sources {
			if c.Sources[j].PodLevel && c.Sources[j].Scheduler == c.Sources[i].Scheduler && pm.val(slotMarkers+j) != "" {
				marked = true
				break
			}
		}
		if !marked {
			return c.Sources[i].Scheduler
		}
	}
	return ""
}

// withQueueCheck returns dc with the queue check of the object (nv, and
// ov on UPDATE) under identity id: dc with its queue when the check
// passes (and a warning for each marker placement puts elsewhere); dc
// with the denial as a warning in warn mode when the denial may be warned
// (the object is admitted, stamped as it would be); the denial otherwise.
func withQueueCheck(ctx context.Context, st *handlerState, k *kindInfo, req *admissionv1.AdmissionRequest, nv, ov *objectView, id submitter, dc decision) decision {
	switch denied := checkQueues(ctx, st, k, req, nv, ov, id, &dc); {
	case denied == nil:
	case st.cfg.QueueWarn && denied.warnable():
		dc.warnOf(denied)
	default:
		denied.identity = id.user
		return *denied
	}
	return dc
}

// checkQueues authorizes id for every queue the object asks for; on UPDATE
// (old != nil) only for queues the old object did not already ask for. It
// sets dc's queue to the first queue checked (the queue placement chose,
// and the queue its marker asked for when they differ) and adds a warning
// for each marker placement puts elsewhere; or it returns a denial.
//
// Objects a controller makes are checked like any other, under the
// identity stamped on them: a Deployment's pods that carry no marker run
// in the default queue, whatever the Deployment's own labels say.
func checkQueues(ctx context.Context, st *handlerState, k *kindInfo, req *admissionv1.AdmissionRequest, nv, ov *objectView, id submitter, dc *decision) *decision {
	c := st.cfg
	ns := req.Namespace
	var arr [4]target
	ts, err := c.targets(k, ns, nv, true, arr[:0])
	if err != nil {
		dc := deny(CauseUnknownQueue, httpStatusBadRequest, "usher: %s %s: %v", k.kind, objectName(req, nv), err)
		dc.check = CheckSubmit
		return &dc
	}
	if ov != nil {
		var oldArr [4]target
		olds, err := c.targets(k, ns, ov, true, oldArr[:0])
		if err == nil {
			kept := ts[:0]
			for _, t := range ts {
				seen := false
				for j := range olds {
					if olds[j].same(&t) {
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
			return nil
		}
	}
	if st.authz == nil {
		dc := deny(CauseDecisionFailed, httpStatusInternal, errNoAuthorizerMessage)
		dc.check = CheckSubmit
		return &dc
	}
	for i := range ts {
		t := &ts[i]
		d, err := st.authz.AuthorizeSubmit(ctx, SubmitRequest{Partition: c.Partition, Queue: t.queue, User: id.user, Groups: id.groups,
			Decided: id.decided, Place: t.place, Namespace: ns})
		if err != nil {
			dc := deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot decide whether user %q may submit to %s: %v; denied (usher fails closed)",
				id.user, t.describe(c.Partition), err)
			dc.queue, dc.check, dc.field = t.record(), CheckSubmit, t.field(k)
			return &dc
		}
		if !d.Allowed {
			if d.Reason == "" {
				d.Reason = "no ACL allows it"
			}
			dc := deny(CauseQueueSubmitDenied, httpStatusForbidden, "usher: user %q may not submit to %s: %s", id.user, t.describe(c.Partition), d.Reason)
			dc.queue, dc.check, dc.field = t.record(), CheckSubmit, t.field(k)
			return &dc
		}
		if i == 0 {
			dc.queue, dc.queueAsked = t.record(), d.Asked
			if d.Queue != "" {
				dc.queue = d.Queue
			}
		}
		if d.Asked != "" {
			dc.addWarning(fmt.Sprintf("usher: %s %s=%s on the %s asks for queue %s of partition %q, but YuniKorn's placement rules put the pods in queue %q: %s",
				t.src.Kind, t.src.Key, errString(t.value), t.level, errString(d.Asked), c.Partition, d.Queue, d.Reason))
		}
	}
	return nil
}

func recordQueue(q string) string {
	if q == "" {
		return defaultQueueInRecord
	}
	return q
}
