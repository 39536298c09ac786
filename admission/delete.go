package admission

import (
	"context"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
)

// remove reviews a DELETE (enforceDeleteACLs is on, the kind is handled
// and the namespace processed). old is request.oldObject, the object being
// deleted; request.object is null on DELETE.
func remove(ctx context.Context, st *handlerState, k *kindInfo, req *admissionv1.AdmissionRequest, old string, pre *views) decision {
	dc := decideRemove(ctx, st, k, req, old, pre)
	if req.Name == "" {
		// A collection delete (a namespace being emptied, kubectl delete
		// --all) names no object in the request: take the name from the
		// object itself, for the audit record.
		if pre.old.top.name == "" {
			_ = view(st.cfg, k, old, &pre.old, pre.oldDone, "request.oldObject")
		}
		dc.name = pre.old.top.name
	}
	return dc
}

func decideRemove(ctx context.Context, st *handlerState, k *kindInfo, req *admissionv1.AdmissionRequest, old string, pre *views) decision {
	c := st.cfg
	if t := c.trustedDeleter(req.UserInfo.Username, req.UserInfo.Groups); t != TrustNone {
		return allowTrusted(verbDelete, t)
	}
	ov := &pre.old
	if err := view(c, k, old, ov, pre.oldDone, "request.oldObject"); err != nil {
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: cannot tell who may delete %s %s: %v", k.kind, objectName(req, ov), err)
	}
	if ov.top.deleting {
		// Deleting an object that is already being deleted only completes
		// or hastens what an allowed DELETE began: the kubelet's final
		// delete of a terminated pod, foreground deletion, a repeated
		// kubectl delete.
		return allow(RuleTerminating)
	}
	return killRule(ctx, st, k, req, ov, "delete")
}

// trustedDeleter reports whether the requester may delete any object
// without the kill rule, and why: the cluster's controllers (garbage
// collection, Job, CronJob and ReplicaSet cleanup, namespace deletion),
// the front ends trusted to submit for others (they clean up what they
// submitted), and Kubernetes superusers.
func (c *compiled) trustedDeleter(user string, groups []string) Trust {
	switch {
	case c.TrustControllers && c.SystemUsers.Match(user):
		return TrustController
	case c.ExternalUsers.Match(user):
		return TrustExternalUser
	case c.ExternalGroups.MatchAny(groups):
		return TrustExternalGroup
	}
	for _, g := range groups {
		if g == mastersGroup {
			return TrustMasters
		}
	}
	return TrustNone
}

// killRule asks the DeleteAuthorizer whether the requester may kill the
// workload o: the owner named by its user.info, members of its modify ACL,
// admins of its queue and cluster admins may. Every queue the object names
// is a queue it is in (all markers count, as for submission), so an admin
// of any of them may; with no marker, the default queue's. verb says what
// the requester wants to do ("delete"), for messages.
func killRule(ctx context.Context, st *handlerState, k *kindInfo, req *admissionv1.AdmissionRequest, o *objectView, verb string) decision {
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
	var arr [4]target
	ts, err := c.targets(k, req.Namespace, o, false, arr[:0])
	if err != nil {
		// A marker that maps to no queue names no queue whose admins
		// could be asked; root's admins are admins of every queue.
		ts = append(arr[:0], target{queue: "root"})
		note += "; " + err.Error() + ", so only admins of root count as its queue admins"
	}
	if st.del == nil {
		dc := deny(CauseDecisionFailed, httpStatusInternal, errNoDeleteAuthzFormat, user, verb, k.kind+" "+objectName(req, o))
		dc.identity, dc.check = owner, CheckKill
		return dc
	}
	first := ""
	for i := range ts {
		q := ts[i].queue
		ok, reason, err := st.del.AuthorizeDelete(ctx, DeleteRequest{Partition: c.Partition, Queue: q, Owner: owner, ModifyACL: modifyACL, User: user, Groups: groups})
		if err != nil {
			dc := deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot decide whether user %q may %s %s %s: %v; denied (usher fails closed)",
				user, verb, k.kind, objectName(req, o), err)
			dc.identity, dc.queue, dc.check = owner, recordQueue(q), CheckKill
			return dc
		}
		if ok {
			dc := allowBecause(RuleKillRule, reason)
			dc.identity, dc.queue, dc.check = owner, recordQueue(q), CheckKill
			return dc
		}
		if i == 0 {
			first = reason
		}
	}
	if first == "" {
		first = "not the owner, not in its modify ACL, not an admin of its queue, not a cluster admin"
	}
	dc := deny(CauseKillDenied, httpStatusForbidden, "usher: user %q may not %s %s %s: %s%s", user, verb, k.kind, objectName(req, o), first, note)
	dc.identity, dc.queue, dc.check = owner, recordQueue(ts[0].queue), CheckKill
	return deleteMode(c, dc)
}

// killInputsChanged names what an UPDATE from ov to nv changes among the
// fields that decide whether, and by whom, the object may be deleted, or
// returns "" when it changes none:
//
//   - metadata.ownerReferences: the garbage collector deletes an object
//     whose owners are gone (or are deleted), and orphans or cascades by
//     them; pointing an object at a missing owner, or at one of one's own,
//     is a DELETE by proxy;
//   - the modify ACL annotation: who may kill it;
//   - the queue markers, at every level the kill rule reads them: whose
//     queue admins may kill it (YARN's move needs the right to modify the
//     application too);
//   - with bypassAuth, the legacy username label: the owner of an object
//     without user.info.
//
// user.info itself never changes after creation (update refuses it).
func (c *compiled) killInputsChanged(k *kindInfo, ov, nv *objectView) string {
	var changed []string
	add := func(s string) {
		for _, have := range changed {
			if have == s {
				return
			}
		}
		changed = append(changed, s)
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
	levels := [3][2]*metaView{{op, np}}
	n := 1
	if k.layout == layoutCronJob {
		levels[n] = [2]*metaView{&ov.job, &nv.job}
		n++
	}
	if k.layout != layoutPod {
		levels[n] = [2]*metaView{&ov.top, &nv.top}
		n++
	}
	for i := range c.Sources {
		for _, l := range levels[:n] {
			if differ(l[0], l[1], slotMarkers+i) {
				add(c.Sources[i].Kind + " " + c.Sources[i].Key)
				break
			}
		}
	}
	return strings.Join(changed, " and ")
}

// isEviction reports whether req is a CREATE (or any operation) on the
// pods/eviction subresource. The API server sends it with kind Eviction
// (policy/v1) and the Eviction as the object; the pod is not in it.
func isEviction(req *admissionv1.AdmissionRequest) bool {
	return req.SubResource == "eviction" && req.Resource.Group == "" && req.Resource.Resource == "pods"
}

// evict decides an eviction (CREATE pods/eviction) when enforceDeleteACLs
// is on. An eviction deletes the pod without a DELETE review, so it must
// be decided here or the kill rule could be bypassed by anyone whom RBAC
// lets evict (the built-in edit role does). The review names the pod but
// does not carry it, and usher does not read the API, so it cannot tell
// whose pod it is: it lets through those who may delete any pod, and
// refuses everyone else.
//
//   - trusted deleters (trustedDeleter): controllers matching systemUsers
//     (the cluster autoscaler, the descheduler in kube-system), trusted
//     front ends, system:masters (kubectl drain by a cluster operator);
//   - whoever may kill every application: cluster admins, application
//     admins, admins of root. The DeleteAuthorizer is asked about an
//     application nobody owns, in root, with a modify ACL that allows
//     nobody.
//
// Anyone else (the pod's owner too) is told to delete the pod instead,
// which the kill rule decides on the pod itself.
func evict(ctx context.Context, st *handlerState, req *admissionv1.AdmissionRequest) decision {
	c := st.cfg
	switch {
	case req.Operation != admissionv1.Create || !c.EnforceDelete:
		return allow(RuleOperationNotHandled)
	case !c.ProcessNamespace(req.Namespace):
		return allow(RuleNamespaceBypassed)
	}
	user, groups := req.UserInfo.Username, req.UserInfo.Groups
	if t := c.trustedDeleter(user, groups); t != TrustNone {
		// Trusted everywhere: for every queue, as root stands for.
		dc := allowTrusted(verbEviction, t)
		dc.queue = "root"
		return dc
	}
	pod := "Pod " + strconv.Quote(req.Namespace+"/"+req.Name)
	if st.del == nil {
		return killCheck(deny(CauseDecisionFailed, httpStatusInternal, errNoDeleteAuthzFormat, user, "evict", pod))
	}
	ok, reason, err := killsEverything(ctx, st, user, groups)
	if err != nil {
		dc := deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot decide whether user %q may evict %s: %v; denied (usher fails closed)", user, pod, err)
		dc.queue = "root"
		return killCheck(dc)
	}
	if ok {
		dc := allowBecause(RuleEvictionByAdmin, reason)
		dc.queue = "root"
		return killCheck(dc)
	}
	dc := deny(CauseEvictionDenied, httpStatusForbidden, "usher: user %q may not evict %s: with enforceDeleteACLs on, an eviction deletes a pod "+
		"without the kill rule seeing it, so only trusted controllers, members of %s, cluster admins, application admins "+
		"and admins of root may evict; delete the pod instead (its owner, the members of its modify ACL and the admins "+
		"of its queue may)", user, pod, mastersGroup)
	dc.queue = "root"
	return deleteMode(c, killCheck(dc))
}

// killsEverything asks the DeleteAuthorizer whether the requester may kill
// any application, whoever owns it and wherever it runs: whether it may
// kill an application nobody owns, in root, with a modify ACL that allows
// nobody. Cluster admins, application admins and admins of root may.
// st.del must not be nil.
func killsEverything(ctx context.Context, st *handlerState, user string, groups []string) (bool, string, error) {
	return st.del.AuthorizeDelete(ctx, DeleteRequest{Partition: st.cfg.Partition, Queue: "root", ModifyACL: &nobody, User: user, Groups: groups})
}

// killCheck marks dc as decided by the kill rule.
func killCheck(dc decision) decision {
	dc.check = CheckKill
	return dc
}

// nobody is a modify ACL that allows nobody.
var nobody = ""

// isBinding reports whether req binds a pod to a node: pods/binding, or
// the namespace's bindings resource, which the API server serves the same
// way.
func isBinding(req *admissionv1.AdmissionRequest) bool {
	if req.Resource.Group != "" {
		return false
	}
	return req.Resource.Resource == "pods" && req.SubResource == "binding" ||
		req.Resource.Resource == "bindings" && req.SubResource == ""
}

// bind decides a Binding (CREATE on pods/binding). The API server copies
// the Binding's annotations and labels onto the pod it binds, after the
// pod's own reviews and without an UPDATE review of the pod, so what
// usher guards on UPDATE must be guarded here:
//
//   - user.info: never (it cannot change after creation, for anyone);
//   - with enforceDeleteACLs, the modify ACL, queue markers and (with
//     bypassAuth) the legacy username label, which decide who may delete
//     the pod: only trusted deleters and those who may kill every
//     application, since the review does not carry the pod;
//   - with enforceQueueACLs, queue markers: never (warned in warn mode),
//     since the queue they move the pod to cannot be checked against
//     the identity of a pod the review does not carry.
//
// Schedulers bind without any of these, and the topology labels the API
// server adds are none of them.
func bind(ctx context.Context, st *handlerState, req *admissionv1.AdmissionRequest, obj string) decision {
	c := st.cfg
	switch {
	case req.Operation != admissionv1.Create:
		return allow(RuleOperationNotHandled)
	case !c.ProcessNamespace(req.Namespace):
		return allow(RuleNamespaceBypassed)
	}
	var m metaView
	if err := parseBinding(obj, c, &m); err != nil {
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: %v", err)
	}
	user := req.UserInfo.Username
	pod := "Pod " + strconv.Quote(req.Namespace+"/"+req.Name)
	for _, a := range [...]struct {
		slot int
		key  string
	}{{slotUserInfo, UserInfoAnnotation}, {slotDirGroups, DirectoryGroupsAnnotation}} {
		if m.has(a.slot) {
			dc := deny(CauseUserInfoChanged, httpStatusForbidden, "usher: user %q may not set annotation %s on %s through a Binding: "+
				"it records who submitted the pod and cannot change after creation", user, a.key, pod)
			dc.field = "metadata.annotations[" + a.key + "]"
			return dc
		}
	}
	dc := bindKill(ctx, st, req, &m, pod)
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

// bindKill decides the fields of a Binding that decide who may delete the
// pod (m), with enforceDeleteACLs.
func bindKill(ctx context.Context, st *handlerState, req *admissionv1.AdmissionRequest, m *metaView, pod string) decision {
	c, user, groups := st.cfg, req.UserInfo.Username, req.UserInfo.Groups
	if !c.EnforceDelete {
		return allow(RuleBindingPlain)
	}
	var set []string
	if m.has(slotModifyACL) {
		set = append(set, "annotation "+c.ModifyACLKey)
	}
	if c.BypassAuth && m.has(slotLegacy) {
		set = append(set, "label "+LegacyUserLabel)
	}
	for i := range c.Sources {
		if m.has(slotMarkers + i) {
			set = append(set, c.Sources[i].Kind+" "+c.Sources[i].Key)
		}
	}
	if len(set) == 0 {
		return allow(RuleBindingPlain)
	}
	if t := c.trustedDeleter(user, groups); t != TrustNone {
		return allowTrusted(verbBinding, t)
	}
	what := strings.Join(set, " and ")
	if st.del == nil {
		return killCheck(deny(CauseDecisionFailed, httpStatusInternal, errNoDeleteAuthzFormat, user, "set "+what+" on", pod))
	}
	ok, reason, err := killsEverything(ctx, st, user, groups)
	switch {
	case err != nil:
		return killCheck(deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot decide whether user %q may set %s on %s: %v; denied (usher fails closed)", user, what, pod, err))
	case ok:
		return killCheck(allowBecause(RuleBindingByAdmin, reason))
	}
	return deleteMode(c, killCheck(deny(CauseBindingDenied, httpStatusForbidden, "usher: user %q may not set %s on %s through a Binding: with enforceDeleteACLs on, "+
		"it decides who may delete the pod, and a Binding does not show whose pod it is, so only trusted controllers, "+
		"members of %s, cluster admins, application admins and admins of root may set it this way", user, what, pod, mastersGroup)))
}
