package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
)

// ClusterQueueLookup reads the spec.clusterQueue of Kueue's LocalQueue
// namespace/name; ok is false when there is none.
type ClusterQueueLookup func(ctx context.Context, namespace, name string) (cq string, ok bool, err error)

// WithClusterQueueLookup sets how a Kueue marker's LocalQueue is read.
// Default: none, and the marker maps by the LocalQueue's name.
func WithClusterQueueLookup(l ClusterQueueLookup) Option {
	return func(h *Handler) { h.reads.clusterQueues = l }
}

// schedulerKueue is the scheduler whose markers name a LocalQueue.
const schedulerKueue = "kueue"

var errNoLocalQueue = errors.New("does not exist: Kueue leaves the Job suspended until it does, and whoever creates it then chooses " +
	"its ClusterQueue, so usher refuses the Job; create the LocalQueue first")

// viaLocalQueues maps each Kueue marker of ts through its LocalQueue's
// ClusterQueue, so a Job is judged on the queue its LocalQueue is.
func (c *compiled) viaLocalQueues(ctx context.Context, rd *reads, ns string, ts []target) error {
	for i := range ts {
		t := &ts[i]
		if rd.clusterQueues == nil || !t.marker || t.src.Scheduler != schedulerKueue {
			continue
		}
		cq, ok, err := rd.clusterQueues(ctx, ns, t.value)
		switch {
		case err != nil:
			return fmt.Errorf("cannot read LocalQueue %s: %w", errString(ns+"/"+t.value), err)
		case !ok:
			return fmt.Errorf("%s %s=%s on the %s names LocalQueue %s, which %w", t.src.Kind, t.src.Key, errString(t.value), t.level,
				errString(ns+"/"+t.value), errNoLocalQueue)
		}
		if t.queue, _, err = c.MapQueue(t.src, cq, ns, false); err != nil {
			return fmt.Errorf("ClusterQueue %q of LocalQueue %s maps to no queue: %w", cq, errString(ns+"/"+t.value), err)
		}
		t.clusterQueue = cq
	}
	return nil
}

// localQueue decides a LocalQueue's CREATE or UPDATE with enforceQueueACLs:
// its writer needs submit on the queue its ClusterQueue maps to, the queue
// of every Job that names it. Trusted deleters are not asked.
func localQueue(ctx context.Context, st *State, req *admissionv1.AdmissionRequest, obj, old string) decision {
	c := st.cfg
	var src *settings.Source
	if i := slices.IndexFunc(c.Sources, func(s settings.Source) bool { return s.Scheduler == schedulerKueue }); i >= 0 {
		src = &c.Sources[i]
	}
	var spec, was struct {
		Spec struct {
			ClusterQueue string `json:"clusterQueue"`
		} `json:"spec"`
	}
	switch {
	case !c.EnforceQueue || src == nil:
		return allow(RuleKindNotHandled)
	case req.Operation != admissionv1.Create && req.Operation != admissionv1.Update:
		return allow(RuleOperationNotHandled)
	case !c.ProcessNamespace(req.Namespace):
		return allow(RuleNamespaceBypassed)
	case json.Unmarshal([]byte(obj), &spec) != nil:
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: request.object is not a LocalQueue")
	case req.Operation == admissionv1.Update && json.Unmarshal([]byte(old), &was) == nil && was.Spec == spec.Spec:
		return allow(RuleUnchanged)
	}
	user, groups := req.UserInfo.Username, req.UserInfo.Groups
	if tr := c.trustedDeleter(user, groups); tr != TrustNone {
		return allowTrusted("LocalQueue write", tr)
	}
	cq := spec.Spec.ClusterQueue
	q, _, err := c.MapQueue(src, cq, req.Namespace, false)
	lq := "LocalQueue " + errString(req.Namespace+"/"+req.Name)
	var dc decision
	switch {
	case err != nil:
		dc = deny(CauseUnknownQueue, httpStatusBadRequest, "usher: spec.clusterQueue of %s maps to no queue: %v", lq, err)
	case st.authz == nil:
		dc = deny(CauseDecisionFailed, httpStatusInternal, errNoAuthorizerMessage)
	default:
		d, err := st.authz.AuthorizeSubmit(ctx, SubmitRequest{Partition: c.Partition, Queue: q, User: user, Groups: groups})
		switch {
		case err != nil:
			dc = deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot decide whether user %q may submit to queue %s: %v; denied (usher fails closed)",
				user, errString(q), err)
		case d.Allowed:
			dc = allow(RuleLocalQueue)
		default:
			dc = deny(CauseQueueSubmitDenied, httpStatusForbidden, "usher: user %q may not point %s at ClusterQueue %s: it maps to queue %s of partition %q, "+
				"where every Job naming the LocalQueue runs, and %s", user, lq, errString(cq), errString(q), c.Partition, d.Reason)
		}
	}
	dc.queue, dc.check, dc.field, dc.identity = recordQueue(q), CheckSubmit, "spec.clusterQueue", user
	return warnMode(c.QueueWarn, RuleLocalQueue, dc)
}
