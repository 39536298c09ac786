package admission

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
)

// target is one queue an object asks for, and where that was read.
type target struct {
	queue     string
	src       *settings.Source
	level     string
	value     string
	marker    bool
	scheduler string // for the default queue: the pod-level scheduler without a marker
	place     bool   // YuniKorn's placement rules decide; queue is the raw marker value
	// clusterQueue is the ClusterQueue of a Kueue marker's LocalQueue; queue is its mapping.
	clusterQueue string
}

// same reports whether t asks the same question as o.
func (t target) same(o target) bool { return t.queue == o.queue && t.place == o.place }

func (t *target) describe(partition string) string {
	switch {
	case !t.marker && t.scheduler != "":
		return fmt.Sprintf("the default queue of partition %q (the %s carries no %s queue marker, so %s runs its pods there)",
			partition, t.level, t.scheduler, t.scheduler)
	case !t.marker:
		return fmt.Sprintf("the default queue of partition %q (no queue marker on the %s)", partition, t.level)
	}
	q, via := t.queue, ""
	if t.place {
		q, via = providedQueue(t.queue), ", whose placement rules choose the queue"
	} else if t.clusterQueue != "" {
		via = fmt.Sprintf(", whose LocalQueue uses ClusterQueue %q", t.clusterQueue)
	}
	return fmt.Sprintf("queue %s of partition %q (%s %s=%s on the %s, read for %s%s)",
		errString(q), partition, t.src.Kind, t.src.Key, errString(t.value), t.level, t.src.Scheduler, via)
}

// record is the audit record's queue: the one checked, or the provided rule's.
func (t *target) record() string {
	if t.place {
		return recordQueue(providedQueue(t.queue))
	}
	return recordQueue(t.queue)
}

// field is the field path of t's marker ("spec.template.metadata.labels[queue]").
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

// fieldPath turns an unescaped JSON pointer into a field path.
func fieldPath(pointer string) string {
	return strings.ReplaceAll(strings.TrimPrefix(pointer, "/"), "/", ".")
}

// userInfoDenial sets dc's field to k's user.info annotation.
func userInfoDenial(k *kindInfo, dc decision) decision {
	dc.field = fieldPath(k.annotationsPath) + "[" + UserInfoAnnotation + "]"
	return dc
}

// providedQueue is the queue YuniKorn's provided rule reads from a marker:
// outside root, dots become "_dot_" ("ml.training" is root.ml_dot_training).
func providedQueue(v string) string {
	if v == "" || v == "root" || strings.HasPrefix(v, "root.") {
		return v
	}
	return "root." + strings.ReplaceAll(v, ".", "_dot_")
}

// targets lists the distinct queues the object's pods may run in, pod
// level first, every marker counting (usher cannot know which scheduler
// acts), and the default queue ("") when a pod-level scheduler finds none
// of its markers or none names a queue. With placing (the queue check),
// YuniKorn's markers are left to its placement rules.
func (c *compiled) targets(k *kindInfo, ns string, o *objectView, placing bool) ([]target, error) {
	var dst []target
	levels, names, n := o.markerLevels(k)
	for li, m := range levels[:n] {
		for i := range c.Sources {
			src := &c.Sources[i]
			if src.PodLevel && li > 0 {
				continue // not read by its scheduler
			}
			v := m.val(slotMarkers + i)
			if !m.has(slotMarkers+i) || v == "" {
				continue
			}
			q, place, err := c.MapQueue(src, v, ns, placing)
			if err != nil {
				return nil, fmt.Errorf("%s %s=%s on the %s maps to no queue: %w", src.Kind, src.Key, errString(v), names[li], err)
			}
			dst = appendTarget(dst, target{queue: q, src: src, level: names[li], value: v, marker: true, place: place})
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
		// YuniKorn places a pod without its marker too.
		dst = appendTarget(dst, target{level: where, scheduler: sched, place: placing && sched == settings.SchedulerYuniKorn})
	}
	return dst, nil
}

// markerLevels returns the metadata whose queue markers count, the pods'
// first, then a CronJob's job template's and a workload's own, and names them.
func (o *objectView) markerLevels(k *kindInfo) (levels [3]*metaView, names [3]string, n int) {
	levels[0], names[0] = o.pod(), k.where
	n = 1
	if k.layout == layoutCronJob {
		levels[n], names[n] = &o.job, "job template"
		n++
	}
	if k.layout != layoutPod {
		levels[n], names[n] = &o.top, k.kind
		n++
	}
	return levels, names, n
}

// appendTarget appends t unless dst already asks the same question.
func appendTarget(dst []target, t target) []target {
	if slices.ContainsFunc(dst, t.same) {
		return dst
	}
	return append(dst, t)
}

// unmarkedPodScheduler returns the first pod-level scheduler without a marker on pm, or "".
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

// withQueueCheck returns dc for id after, with enforceQueueACLs, the queue
// check of nv (and ov on UPDATE), objects controllers make included: with
// its queue, with the denial as a warning in warn mode, or the denial.
func withQueueCheck(ctx context.Context, st *State, rd *reads, k *kindInfo, req *admissionv1.AdmissionRequest, nv, ov *objectView, id submitter, dc decision) decision {
	dc.identity = id.user
	if !st.cfg.EnforceQueue {
		return dc
	}
	denied := checkQueues(ctx, st, rd, k, req, nv, ov, id, &dc)
	denied.check = CheckSubmit
	switch {
	case denied.code == 0:
	case st.cfg.QueueWarn && denied.warnable():
		dc.warnOf(&denied)
	default:
		denied.identity = id.user
		return denied
	}
	return dc
}

// checkQueues authorizes id for every queue the object asks for (on
// UPDATE, those ov did not), setting dc's queue to the first; or denies.
func checkQueues(ctx context.Context, st *State, rd *reads, k *kindInfo, req *admissionv1.AdmissionRequest, nv, ov *objectView, id submitter, dc *decision) (denied decision) {
	c := st.cfg
	ns := req.Namespace
	ts, err := c.targets(k, ns, nv, true)
	if err != nil {
		return deny(CauseUnknownQueue, httpStatusBadRequest, "usher: %s %s: %v", k.kind, objectName(req, nv), err)
	}
	if ov != nil {
		olds, err := c.targets(k, ns, ov, true)
		if err == nil {
			ts = slices.DeleteFunc(ts, func(t target) bool { return slices.ContainsFunc(olds, t.same) })
		}
		if len(ts) == 0 {
			return decision{}
		}
	}
	switch err := c.viaLocalQueues(ctx, rd, ns, ts); {
	case errors.Is(err, errNoLocalQueue):
		return deny(CauseUnknownQueue, httpStatusBadRequest, "usher: %s %s: %v", k.kind, objectName(req, nv), err)
	case err != nil:
		return deny(CauseDecisionFailed, httpStatusInternal, "usher: %s %s: %v; denied (usher fails closed)", k.kind, objectName(req, nv), err)
	case st.authz == nil:
		return deny(CauseDecisionFailed, httpStatusInternal, errNoAuthorizerMessage)
	}
	for i := range ts {
		t := &ts[i]
		d, err := st.authz.AuthorizeSubmit(ctx, SubmitRequest{Partition: c.Partition, Queue: t.queue, User: id.user, Groups: id.groups,
			Decided: id.decided, Place: t.place, Namespace: ns, ParentQueue: rd.parentQueue})
		switch {
		case err != nil:
			denied = deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot decide whether user %q may submit to %s: %v; denied (usher fails closed)",
				id.user, t.describe(c.Partition), err)
		case !d.Allowed:
			denied = deny(CauseQueueSubmitDenied, httpStatusForbidden, "usher: user %q may not submit to %s: %s", id.user, t.describe(c.Partition),
				cmp.Or(d.Reason, "no ACL allows it"))
		}
		if denied.code != 0 {
			denied.queue, denied.field = t.record(), t.field(k)
			return denied
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
	return decision{}
}

// recordQueue is q as the audit record shows it, defaultQueueInRecord for the default queue.
func recordQueue(q string) string { return cmp.Or(q, defaultQueueInRecord) }
