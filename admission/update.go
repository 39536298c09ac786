package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
)

// update refuses any change of user.info or DirectoryGroupsAnnotation;
// with enforceDeleteACLs, what decides deletion changes only for whoever
// may delete; with enforceQueueACLs, queues newly asked for are checked.
func update(ctx context.Context, st *State, rd *reads, k *kindInfo, req *admissionv1.AdmissionRequest, obj, old string, pre *views) decision {
	c := st.cfg
	nv, ov := &pre.obj, &pre.old
	if err := view(c, k, obj, nv, &pre.objDone, "request.object"); err != nil {
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: %v", err)
	}
	if err := view(c, k, old, ov, &pre.oldDone, "request.oldObject"); err != nil {
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: %v", err)
	}
	np, op := nv.pod(), ov.pod()
	for _, a := range stampKeys {
		slot, key := a.slot, a.key
		oldHas, newHas := op.has(slot), np.has(slot)
		if oldHas == newHas && op.val(slot) == np.val(slot) {
			continue
		}
		verb := "change annotation " + key + " on"
		switch {
		case !newHas:
			verb = "remove annotation " + key + " from"
		case !oldHas:
			verb = "add annotation " + key + " to"
		}
		why := ""
		if newHas && slot == slotUserInfo {
			if _, err := ParseUserInfo(np.val(slot)); err != nil {
				why = "; the new value is not valid either: " + err.Error()
			}
		}
		dc := deny(CauseUserInfoChanged, httpStatusForbidden, "usher: user %q may not %s %s: "+
			"it records who submitted the workload and cannot change after creation%s",
			req.UserInfo.Username, verb, place(k, req, nv), why)
		dc.field = fieldPath(k.annotationsPath) + "[" + key + "]"
		return dc
	}
	if c.EnforceDelete {
		// Who may delete must not be widened by whoever may merely edit.
		if what := c.killInputsChanged(k, ov, nv); what != "" {
			switch c.trustedDeleter(req.UserInfo.Username, req.UserInfo.Groups) {
			case TrustNone:
				if dc := killRule(ctx, st, rd, k, req, ov, "change "+what+" on"); !dc.allowed {
					return dc
				}
			case TrustController:
				if ov.top.owners != nv.top.owners {
					if dc := adopt(ctx, st, rd, k, req, ov, nv); !dc.allowed {
						return dc
					}
				}
			}
		}
	}
	id := submitter{user: req.UserInfo.Username, groups: req.UserInfo.Groups}
	if np.has(slotUserInfo) {
		if ui, err := ParseUserInfo(np.val(slotUserInfo)); err == nil {
			id = submitter{user: ui.User, groups: ui.Groups}
		}
	} else if c.BypassAuth && np.has(slotLegacy) {
		id = submitter{user: np.val(slotLegacy)}
	}
	return withQueueCheck(ctx, st, rd, k, req, nv, ov, id, allow(RuleUnchanged))
}
