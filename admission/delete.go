package admission

import (
	"context"

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
	if reason, ok := c.trustedDeleter(req.UserInfo.Username, req.UserInfo.Groups); ok {
		return allow(reason)
	}
	ov := &pre.old
	if err := view(c, k, old, ov, pre.oldDone, "request.oldObject"); err != nil {
		return deny(httpStatusBadRequest, "usher: cannot tell who may delete %s %s: %v", k.kind, objectName(req, ov), err)
	}
	if ov.top.deleting {
		// Deleting an object that is already being deleted only completes
		// or hastens what an allowed DELETE began: the kubelet's final
		// delete of a terminated pod, foreground deletion, a repeated
		// kubectl delete.
		return allow(reasonDelTerminating)
	}
	return killRule(ctx, st, k, req, ov, "delete")
}

// trustedDeleter reports whether the requester may delete any object
// without the kill rule, and why: the cluster's controllers (garbage
// collection, Job, CronJob and ReplicaSet cleanup, namespace deletion),
// the front ends trusted to submit for others (they clean up what they
// submitted), and Kubernetes superusers.
func (c *Compiled) trustedDeleter(user string, groups []string) (string, bool) {
	switch {
	case c.trustControllers && c.systemUsers.match(user):
		return reasonDelController, true
	case c.externalUsers.match(user):
		return reasonDelExtUser, true
	case c.externalGroups.matchAny(groups):
		return reasonDelExtGroup, true
	}
	for _, g := range groups {
		if g == mastersGroup {
			return reasonDelMasters, true
		}
	}
	return "", false
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
		ui, err := ParseUserInfo(pm.vals[slotUserInfo])
		if err != nil {
			note = "; its annotation " + UserInfoAnnotation + " is not valid (" + err.Error() + "), so it has no recorded owner"
			break
		}
		owner = ui.User
	case c.bypassAuth && pm.vals[slotLegacy] != "":
		owner = pm.vals[slotLegacy]
	default:
		note = "; it has no annotation " + UserInfoAnnotation + " (created before usher?), so it has no recorded owner"
	}
	modifyACL := ""
	if pm.has(slotModifyACL) {
		if modifyACL = pm.vals[slotModifyACL]; modifyACL == "" {
			modifyACL = " " // set, and empty: nobody
		}
	}
	var arr [4]target
	ts, err := c.targets(k, req.Namespace, o, arr[:0])
	if err != nil {
		// A marker that maps to no queue names no queue whose admins
		// could be asked; root's admins are admins of every queue.
		ts = append(arr[:0], target{queue: "root"})
		note += "; " + err.Error() + ", so only admins of root count as its queue admins"
	}
	if st.del == nil {
		dc := deny(httpStatusInternal, errNoDeleteAuthzFormat, user, verb, k.kind+" "+objectName(req, o))
		dc.identity = owner
		return dc
	}
	first := ""
	for i := range ts {
		q := ts[i].queue
		ok, reason, err := st.del.AuthorizeDelete(ctx, c.partition, q, owner, modifyACL, user, groups)
		if err != nil {
			dc := deny(httpStatusInternal, "usher: cannot decide whether user %q may %s %s %s: %v; denied (usher fails closed)",
				user, verb, k.kind, objectName(req, o), err)
			dc.identity, dc.queue = owner, recordQueue(q)
			return dc
		}
		if ok {
			if reason == "" {
				reason = reasonDelAllowed
			}
			dc := allow(reason)
			dc.identity, dc.queue = owner, recordQueue(q)
			return dc
		}
		if i == 0 {
			first = reason
		}
	}
	if first == "" {
		first = "not the owner, not in its modify ACL, not an admin of its queue, not a cluster admin"
	}
	dc := deny(httpStatusForbidden, "usher: user %q may not %s %s %s: %s%s", user, verb, k.kind, objectName(req, o), first, note)
	dc.identity, dc.queue = owner, recordQueue(ts[0].queue)
	return dc
}
