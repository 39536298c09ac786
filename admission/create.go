package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
)

// create stamps the submitter's identity, keeps a trusted submitter's
// user.info or copies a propagator's parent's, and checks the queues
// with enforceQueueACLs.
func create(ctx context.Context, st *State, rd *reads, hook hookKind, k *kindInfo, req *admissionv1.AdmissionRequest, obj string, pre *views) decision {
	c := st.cfg
	ov := &pre.obj
	if err := view(c, k, obj, ov, &pre.objDone, "request.object"); err != nil {
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: %v", err)
	}
	if k.layout != layoutPod && !ov.hasTemplate {
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: %s %s has no pod template (%s): there is nowhere to record who submitted it",
			k.kind, objectName(req, ov), k.metaPath[:len(k.metaPath)-len("/metadata")])
	}
	pm := ov.pod()
	user, groups := req.UserInfo.Username, req.UserInfo.Groups
	var who submitter
	var dc decision
	var ui *UserInfo
	how := stampNew
	var pr *propagation
	rule, kept := keptBy[c.trustedDeleter(user, groups)] // trusted with any user.info (bypassAuth too)
	if p := c.Propagator(user); p != nil && !c.BypassAuth && !kept {
		var denied decision
		if pr, denied = parentOf(ctx, rd, p, k, req, ov, obj, pre.podUID); denied.code != 0 {
			return denied
		}
		if !pr.stamped && c.UnstampedDeny {
			return deny(CausePropagationDenied, httpStatusForbidden, "usher: %s, the parent of %s, carries no annotation %s, so there is no identity "+
				"for %q to copy (unstampedParents: deny)", pr.parent, place(k, req, ov), UserInfoAnnotation, user)
		}
	}
	switch {
	case pr != nil && pr.stamped:
		var denied decision
		if who, ui, how, denied = propagated(pr, hook, k, req, ov, pre, st.ident != nil && !c.StampGiven); denied.code != 0 {
			return denied
		}
		dc = allow(RulePropagated)
		dc.propagation = pr.String()
	case pm.has(slotUserInfo):
		u, n, err := parseUserInfo(pm.val(slotUserInfo), pre.lim.max)
		if err != nil {
			return userInfoDenial(k, deny(CauseUserInfoInvalid, httpStatusBadRequest, "usher: annotation %s on %s is not valid: %v (value %s)",
				UserInfoAnnotation, place(k, req, ov), err, errString(pm.val(slotUserInfo))))
		}
		if n > len(u.Groups) {
			return userInfoDenial(k, pre.lim.refuse("annotation", CauseUserInfoInvalid, "annotation "+UserInfoAnnotation+" on "+place(k, req, ov), n))
		}
		ui = &u
		switch {
		case c.BypassAuth:
			rule = RuleKeptBypassAuth
		case kept:
		case u.User == user:
			// Restamped, so a re-applied manifest cannot freeze old groups.
			rule, how = RuleKeptSame, stampSame
		default:
			return userInfoDenial(k, deny(CauseUserInfoForged, httpStatusForbidden, "usher: user %q may not set annotation %s on %s: %s",
				user, UserInfoAnnotation, place(k, req, ov), untrustedHint(c, user)))
		}
		dc = allow(rule)
		who = submitter{user: user, groups: groups}
		if how != stampSame {
			// A trusted stamp's directory groups are looked up again: a
			// snapshot must not become a permanent grant.
			listed, err := parseDirectoryGroups(pm.val(slotDirGroups), pm.has(slotDirGroups))
			if err != nil {
				return userInfoDenial(k, deny(CauseUserInfoInvalid, httpStatusBadRequest, "usher: annotation %s on %s is not valid: %v",
					DirectoryGroupsAnnotation, place(k, req, ov), err))
			}
			who = submitter{user: u.User, groups: without(u.Groups, listed)}
			how = stampKept
			if k.kind == "ReplicaSet" && rule == RuleKeptController {
				how = stampNever // see RuleControllerReplicaSet
			}
		}
	case c.BypassAuth && pm.has(slotLegacy):
		// YuniKorn's rule: the scheduler reads the label.
		dc = allow(RuleLegacyLabel)
		dc.warning = legacyLabelWarning
		return withQueueCheck(ctx, st, rd, k, req, ov, nil, submitter{user: pm.val(slotLegacy)}, dc)
	case k.kind == "ReplicaSet" && c.SystemUsers.Match(user):
		// YuniKorn's rule: a stamped template would never match the
		// Deployment's, which would create ReplicaSets without end.
		return withQueueCheck(ctx, st, rd, k, req, ov, nil, submitter{user: user, groups: groups}, allow(RuleControllerReplicaSet))
	case user == "":
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: request.userInfo.username is empty: there is no identity to record on %s %s",
			k.kind, objectName(req, ov))
	case hook == hookValidate:
		return userInfoDenial(k, notStamped(k, req, ov))
	default:
		who = submitter{user: user, groups: groups}
		dc = allow(RuleStamped)
	}
	if pr != nil && !pr.stamped && hook == hookMutate {
		dc.unstampedParent = pr.parent
		dc.addWarning(fmt.Sprintf("usher: %s, the parent of %s, carries no annotation %s: %s is stamped with %q, the propagator's own identity "+
			"(unstampedParents: propagatorIdentity)", pr.parent, place(k, req, ov), UserInfoAnnotation, place(k, req, ov), user))
	}
	dc, check := stamp(ctx, st, hook, k, req, ov, who, ui, how, dc)
	if !dc.allowed {
		return dc
	}
	if len(k.templates) > 0 && hook == hookMutate {
		var ok bool
		if dc.patch, ok = stampTemplates(k, pm, obj, dc.patch, &dc.written); !ok {
			return deny(CauseInvalidObject, httpStatusBadRequest, "usher: %s %s has so many templates that stamping each would pass %d MiB, "+
				"the API server's limit of a request", k.kind, objectName(req, ov), maxTemplatesPatch>>20)
		}
	}
	return withQueueCheck(ctx, st, rd, k, req, ov, nil, check, dc)
}

// notStamped denies on /validate an object /mutate did not stamp.
func notStamped(k *kindInfo, req *admissionv1.AdmissionRequest, ov *objectView) decision {
	return deny(CauseUserInfoMissing, httpStatusForbidden, "usher: %s has no annotation %s: the usher mutating webhook did not stamp it "+
		"(register /mutate for %s CREATE with failurePolicy: Fail)", place(k, req, ov), UserInfoAnnotation, k.kind)
}

// keptBy is the rule keeping the user.info a trusted submitter sets: the
// trusted deleters but system:masters, whom create does not trust with it.
var keptBy = map[Trust]Rule{TrustController: RuleKeptController, TrustExternalUser: RuleKeptExternalUser, TrustExternalGroup: RuleKeptExternalGroup}

// untrustedHint explains who may set the annotation.
func untrustedHint(c *compiled, user string) string {
	if !c.TrustControllers && c.SystemUsers.Match(user) {
		return "the user matches systemUsers but trustControllers is false"
	}
	return "only controllers matching systemUsers, users matching externalUsers and members of groups matching " +
		"externalGroups may supply it; remove it and usher records your own identity"
}
