package admission

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
)

// remove reviews a DELETE by the kill rule; old is request.oldObject.
func remove(ctx context.Context, st *State, rd *reads, k *kindInfo, req *admissionv1.AdmissionRequest, old string, pre *views) decision {
	c := st.cfg
	if t := c.trustedDeleter(req.UserInfo.Username, req.UserInfo.Groups); t != TrustNone {
		return allowTrusted("delete", t)
	}
	ov := &pre.old
	if err := view(c, k, old, ov, &pre.oldDone, "request.oldObject"); err != nil {
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: cannot tell who may delete %s %s: %v", k.kind, objectName(req, ov), err)
	}
	if ov.top.deleting {
		// It only completes what an allowed DELETE began.
		return allow(RuleTerminating)
	}
	if p := c.Propagator(req.UserInfo.Username); p != nil && ov.pod().has(slotUserInfo) {
		// A propagator may delete what it may create: its parent's user.
		pr, denied := parentOf(ctx, rd, p, k, req, ov, old, pre.podUID)
		if denied.code == 0 && pr.stamped {
			u, err1 := ParseUserInfo(pr.info)
			got, err2 := ParseUserInfo(ov.pod().val(slotUserInfo))
			if err1 == nil && err2 == nil && got.User == u.User { // its groups may be a later restamp's
				dc := allow(RulePropagatorDelete)
				dc.identity, dc.propagation = u.User, pr.String()
				return dc
			}
		}
	}
	return killRule(ctx, st, rd, k, req, ov, "delete")
}

// trustedDeleter says why the requester may delete anything without the
// kill rule (controllers, trusted front ends, superusers), or TrustNone.
func (c *compiled) trustedDeleter(user string, groups []string) Trust {
	switch {
	case c.TrustControllers && c.SystemUsers.Match(user):
		return TrustController
	case c.ExternalUsers.Match(user):
		return TrustExternalUser
	case c.ExternalGroups.MatchAny(groups):
		return TrustExternalGroup
	case slices.Contains(groups, mastersGroup):
		return TrustMasters
	}
	return TrustNone
}

// killRule asks the DeleteAuthorizer whether the requester may kill o,
// for each queue its markers name (an admin of any may); verb is for messages.
func killRule(ctx context.Context, st *State, rd *reads, k *kindInfo, req *admissionv1.AdmissionRequest, o *objectView, verb string) decision {
	c := st.cfg
	user, groups := req.UserInfo.Username, req.UserInfo.Groups
	pm := o.pod()
	owner, note := "", ""
	switch {
	case pm.has(slotUserInfo):
		ui, err := ParseUserInfo(pm.val(slotUserInfo))
		if err != nil {
			note = "; its annotation " + UserInfoAnnotation + " is not valid (" + err.Error() + "), so it has no recorded owner"
			break
		}
		owner = ui.User
	case c.BypassAuth && pm.val(slotLegacy) != "":
		owner = pm.val(slotLegacy)
	default:
		note = "; it has no annotation " + UserInfoAnnotation + " (created before usher?), so it has no recorded owner"
	}
	var modifyACL *string
	if pm.has(slotModifyACL) {
		modifyACL = &pm.vals[slotModifyACL].s
	}
	ts, err := c.targets(k, req.Namespace, o, false)
	if err == nil {
		err = c.viaLocalQueues(ctx, rd, req.Namespace, ts)
	}
	if err != nil {
		ts = []target{{queue: "root"}} // root's admins admin every queue
		note += "; " + err.Error() + ", so only admins of root count as its queue admins"
	}
	if st.del == nil {
		dc := deny(CauseDecisionFailed, httpStatusInternal, errNoDeleteAuthzFormat, user, verb, k.kind+" "+objectName(req, o))
		dc.identity, dc.check = owner, CheckKill
		return dc
	}
	var dc decision
	first, q := "", ts[0].queue
	for i := 0; i < len(ts) && dc.code == 0; i++ { // until an answer decides
		ok, reason, err := st.del.AuthorizeDelete(ctx, DeleteRequest{Partition: c.Partition, Queue: ts[i].queue, Owner: owner, ModifyACL: modifyACL,
			User: user, Groups: groups})
		switch {
		case err != nil:
			dc, q = deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot decide whether user %q may %s %s %s: %v; denied (usher fails closed)",
				user, verb, k.kind, objectName(req, o), err), ts[i].queue
		case ok:
			dc, q = allowBecause(RuleKillRule, reason), ts[i].queue
		case i == 0:
			first = reason
		}
	}
	if dc.code == 0 {
		dc = deny(CauseKillDenied, httpStatusForbidden, "usher: user %q may not %s %s %s: %s%s", user, verb, k.kind, objectName(req, o),
			cmp.Or(first, "not the owner, not in its modify ACL, not an admin of its queue, not a cluster admin"), note)
	}
	dc.identity, dc.queue, dc.check = owner, recordQueue(q), CheckKill
	return warnMode(c.DeleteWarn, RuleWarnedDelete, dc)
}

// killInputsChanged names what an UPDATE from ov to nv changes of what
// decides who may delete it, "" for nothing (docs/delete.md); owners
// count, as the garbage collector deletes an orphan: a DELETE by proxy.
func (c *compiled) killInputsChanged(k *kindInfo, ov, nv *objectView) string {
	var changed []string
	add := func(s string) {
		if !slices.Contains(changed, s) {
			changed = append(changed, s)
		}
	}
	differ := func(a, b *metaView, slot int) bool {
		return a.has(slot) != b.has(slot) || a.val(slot) != b.val(slot)
	}
	if ov.top.owners != nv.top.owners {
		add("metadata.ownerReferences")
	}
	op, np := ov.pod(), nv.pod()
	if differ(op, np, slotModifyACL) {
		add("annotation " + c.ModifyACLKey)
	}
	if c.BypassAuth && differ(op, np, slotLegacy) {
		add("label " + LegacyUserLabel)
	}
	olds, _, n := ov.markerLevels(k)
	news, _, _ := nv.markerLevels(k)
	for i := range c.Sources {
		for l := range n {
			if differ(olds[l], news[l], slotMarkers+i) {
				add(c.Sources[i].Kind + " " + c.Sources[i].Key)
				break
			}
		}
	}
	return strings.Join(changed, " and ")
}

// isEviction reports whether req is on the pods/eviction subresource.
func isEviction(req *admissionv1.AdmissionRequest) bool {
	return req.SubResource == "eviction" && req.Resource.Group == "" && req.Resource.Resource == "pods"
}

// evict decides an eviction, a DELETE whose review does not carry the pod.
func evict(ctx context.Context, st *State, req *admissionv1.AdmissionRequest) decision {
	c := st.cfg
	switch {
	case req.Operation != admissionv1.Create || !c.EnforceDelete:
		return allow(RuleOperationNotHandled)
	case !c.ProcessNamespace(req.Namespace):
		return allow(RuleNamespaceBypassed)
	}
	return killsAny(ctx, st, req, "eviction", "evict", "root", RuleEvictionByAdmin, CauseEvictionDenied, ": with enforceDeleteACLs on, "+
		"an eviction deletes a pod without the kill rule seeing it, so only trusted controllers, members of "+mastersGroup+", cluster admins, "+
		"application admins and admins of root may evict; delete the pod instead (its owner, the members of its modify ACL and the admins "+
		"of its queue may)")
}

// killsAny decides whether the requester may "do" the request's pod, which
// only trusted deleters (for action) and whoever may kill an unowned application
// of root whose modify ACL allows nobody (so any) may; queue is the record's.
func killsAny(ctx context.Context, st *State, req *admissionv1.AdmissionRequest, action, do, queue string,
	byAdmin Rule, cause Cause, why string) decision {
	user, groups := req.UserInfo.Username, req.UserInfo.Groups
	pod := "Pod " + strconv.Quote(req.Namespace+"/"+req.Name)
	var dc decision
	if t := st.cfg.trustedDeleter(user, groups); t != TrustNone {
		dc = allowTrusted(action, t)
		dc.queue = queue
		return dc
	}
	if st.del == nil {
		dc = deny(CauseDecisionFailed, httpStatusInternal, errNoDeleteAuthzFormat, user, do, pod)
		dc.check = CheckKill
		return dc
	}
	switch ok, reason, err := st.del.AuthorizeDelete(ctx, DeleteRequest{Partition: st.cfg.Partition, Queue: "root", ModifyACL: new(string),
		User: user, Groups: groups}); {
	case err != nil:
		dc = deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot decide whether user %q may %s %s: %v; denied (usher fails closed)",
			user, do, pod, err)
	case ok:
		dc = allowBecause(byAdmin, reason)
	default:
		dc = deny(cause, httpStatusForbidden, "usher: user %q may not %s %s%s", user, do, pod, why)
	}
	dc.queue, dc.check = queue, CheckKill
	return warnMode(st.cfg.DeleteWarn, RuleWarnedDelete, dc) // only a refusal (403) may be warned
}

// isBinding reports whether req binds a pod: pods/binding or bindings.
func isBinding(req *admissionv1.AdmissionRequest) bool {
	return req.Resource.Group == "" && (req.Resource.Resource == "pods" && req.SubResource == "binding" ||
		req.Resource.Resource == "bindings" && req.SubResource == "")
}

// bindingKind reads a v1 Binding's metadata as a pod's.
var bindingKind = kindInfo{kind: "Binding", apiVersion: "v1", layout: layoutPod}

// bind decides a Binding, whose labels and annotations the API server
// copies onto the pod without an UPDATE review and which does not carry
// the pod: never user.info, what decides deletion only as evict allows,
// and no queue marker with enforceQueueACLs.
func bind(ctx context.Context, st *State, req *admissionv1.AdmissionRequest, obj string) decision {
	c := st.cfg
	switch {
	case req.Operation != admissionv1.Create:
		return allow(RuleOperationNotHandled)
	case !c.ProcessNamespace(req.Namespace):
		return allow(RuleNamespaceBypassed)
	}
	var o objectView
	if err := parseObject(obj, &bindingKind, &c.wantKeys, &o, "request.object"); err != nil {
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: %v", err)
	}
	m := &o.top
	user := req.UserInfo.Username
	pod := "Pod " + strconv.Quote(req.Namespace+"/"+req.Name)
	for _, a := range stampKeys {
		if m.has(a.slot) {
			dc := deny(CauseUserInfoChanged, httpStatusForbidden, "usher: user %q may not set annotation %s on %s through a Binding: "+
				"it records who submitted the pod and cannot change after creation", user, a.key, pod)
			dc.field = "metadata.annotations[" + a.key + "]"
			return dc
		}
	}
	dc := bindKill(ctx, st, req, &o)
	if !dc.allowed || !c.EnforceQueue {
		return dc
	}
	for i := range c.Sources {
		if m.has(slotMarkers + i) {
			denied := deny(CauseQueueSubmitDenied, httpStatusForbidden, "usher: user %q may not set %s %s on %s through a Binding: with enforceQueueACLs on, "+
				"it moves the pod to a queue that cannot be checked, since a Binding does not show whose pod it is; label the pod instead",
				user, c.Sources[i].Kind, c.Sources[i].Key, pod)
			denied.check = CheckSubmit
			if !c.QueueWarn {
				return denied
			}
			dc.warnOf(&denied)
			break
		}
	}
	return dc
}

// bindKill decides, with enforceDeleteACLs, a Binding's fields that
// decide who may delete (its ownerReferences are not copied onto the pod).
func bindKill(ctx context.Context, st *State, req *admissionv1.AdmissionRequest, o *objectView) decision {
	what := st.cfg.killInputsChanged(&bindingKind, &objectView{top: metaView{owners: o.top.owners}}, o)
	if !st.cfg.EnforceDelete || what == "" {
		return allow(RuleBindingPlain)
	}
	return killsAny(ctx, st, req, "binding", "set "+what+" on", "", RuleBindingByAdmin, CauseBindingDenied,
		" through a Binding: with enforceDeleteACLs on, it decides who may delete the pod, and a Binding does not show whose pod it is, "+
			"so only trusted controllers, members of "+mastersGroup+", cluster admins, application admins and admins of root may set it this way")
}
