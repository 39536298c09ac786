package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
)

// This file holds the UPDATE rules: the user.info annotation never changes
// after creation (on a pod or any pod template); with enforceDeleteACLs,
// what decides deletion changes only for whoever may delete; with
// enforceQueueACLs, queues the object newly asks for are checked.

func update(ctx context.Context, st *handlerState, owners OwnerLookup, k *kindInfo, req *admissionv1.AdmissionRequest, obj, old string, pre *views) decision {
	c := st.cfg
	nv, ov := &pre.obj, &pre.old
	if err := view(c, k, obj, nv, pre.objDone, "request.object"); err != nil {
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: %v", err)
	}
	if err := view(c, k, old, ov, pre.oldDone, "request.oldObject"); err != nil {
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: %v", err)
	}
	np, op := nv.pod(), ov.pod()
	oldHas, newHas := op.has(slotUserInfo), np.has(slotUserInfo)
	if oldHas != newHas || op.vals[slotUserInfo] != np.vals[slotUserInfo] {
		verb := "change annotation " + UserInfoAnnotation + " on"
		switch {
		case !newHas:
			verb = "remove annotation " + UserInfoAnnotation + " from"
		case !oldHas:
			verb = "add annotation " + UserInfoAnnotation + " to"
		}
		why := ""
		if newHas {
			if _, err := ParseUserInfo(np.vals[slotUserInfo]); err != nil {
				why = "; the new value is not valid either: " + err.Error()
			}
		}
		return userInfoDenial(k, deny(CauseUserInfoChanged, httpStatusForbidden, "usher: user %q may not %s %s: "+
			"it records who submitted the workload and cannot change after creation%s",
			req.UserInfo.Username, verb, place(k, req, nv), why))
	}
	if c.enforceDelete {
		// Who may delete must not be widened by whoever may merely edit.
		if what := c.killInputsChanged(k, ov, nv); what != "" {
			switch c.trustedDeleter(req.UserInfo.Username, req.UserInfo.Groups) {
			case TrustNone:
				if dc := killRule(ctx, st, k, req, ov, "change "+what+" on"); !dc.allowed {
					return dc
				}
			case TrustController:
				// A controller adopting: see adopt.
				if ov.top.owners != nv.top.owners {
					if dc := adopt(ctx, st, owners, k, req, ov, nv); !dc.allowed {
						return dc
					}
				}
			}
		}
	}
	dc := allow(RuleUnchanged)
	id := identity{req.UserInfo.Username, req.UserInfo.Groups}
	if newHas {
		if ui, err := ParseUserInfo(np.vals[slotUserInfo]); err == nil {
			id = identity{ui.User, ui.Groups}
		}
	} else if c.bypassAuth && np.has(slotLegacy) {
		id = identity{np.vals[slotLegacy], nil}
	}
	dc.identity = id.user
	if c.enforce {
		return withQueueCheck(ctx, st, k, req, nv, ov, id, dc)
	}
	return dc
}
