package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
)

// This file holds the CREATE rules: stamp the submitter's identity, or
// keep a user.info annotation a trusted submitter supplied (see the
// package comment for who is trusted; stamp.go for what is written), and
// check the queues the object asks for when enforceQueueACLs is on.

func create(ctx context.Context, st *handlerState, hook hookKind, k *kindInfo, req *admissionv1.AdmissionRequest, obj string, pre *views, buf *[]byte) decision {
	c := st.cfg
	ov := &pre.obj
	if err := view(c, k, obj, ov, pre.objDone, "request.object"); err != nil {
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
	switch {
	case pm.has(slotUserInfo):
		u, n, err := parseUserInfo(pm.val(slotUserInfo), pre.lim.keep())
		if err != nil {
			return userInfoDenial(k, deny(CauseUserInfoInvalid, httpStatusBadRequest, "usher: annotation %s on %s is not valid: %v (value %s)",
				UserInfoAnnotation, place(k, req, ov), err, errString(pm.val(slotUserInfo))))
		}
		if n > len(u.Groups) {
			return userInfoDenial(k, pre.lim.refuse("annotation", CauseUserInfoInvalid, "annotation "+UserInfoAnnotation+" on "+place(k, req, ov), n))
		}
		ui = &u
		var rule Rule
		switch {
		case c.BypassAuth:
			rule = RuleKeptBypassAuth
		case c.TrustControllers && c.SystemUsers.Match(user):
			rule = RuleKeptController
		case c.ExternalUsers.Match(user):
			rule = RuleKeptExternalUser
		case c.ExternalGroups.MatchAny(groups):
			rule = RuleKeptExternalGroup
		case u.User == user:
			// The requester's own name: the stamp is the identity usher
			// decides for it, whatever groups the annotation lists, so
			// that a re-applied manifest cannot freeze an old group list.
			rule, how = RuleKeptSame, stampSame
		default:
			return userInfoDenial(k, deny(CauseUserInfoForged, httpStatusForbidden, "usher: user %q may not set annotation %s on %s: %s",
				user, UserInfoAnnotation, place(k, req, ov), untrustedHint(c, user)))
		}
		dc = allow(rule)
		who = submitter{user: user, groups: groups}
		if how != stampSame {
			// A trusted stamp: its directory groups are looked up again
			// (a snapshot must not become a permanent grant); the rest
			// are the groups it was given.
			listed, err := directoryGroups(pm)
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
		// YuniKorn's rule: with bypassAuth, an object carrying the legacy label and
		// no annotation is left alone; the scheduler reads the label.
		dc = allow(RuleLegacyLabel)
		dc.warning = legacyLabelWarning
		return queueChecked(ctx, st, k, req, ov, submitter{user: pm.val(slotLegacy)}, dc)
	case k.kind == "ReplicaSet" && c.SystemUsers.Match(user):
		// YuniKorn's rule: never change a ReplicaSet a controller creates.
		// The Deployment controller compares the ReplicaSet's template with
		// the Deployment's; a stamped copy would never match and the
		// controller would create ReplicaSets without end. Its pods are
		// stamped when they are created.
		return queueChecked(ctx, st, k, req, ov, submitter{user: user, groups: groups}, allow(RuleControllerReplicaSet))
	case user == "":
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: request.userInfo.username is empty: there is no identity to record on %s %s",
			k.kind, objectName(req, ov))
	case hook == hookValidate:
		return userInfoDenial(k, deny(CauseUserInfoMissing, httpStatusForbidden, "usher: %s has no annotation %s: the usher mutating webhook did not stamp it "+
			"(register /mutate for %s CREATE with failurePolicy: Fail)",
			place(k, req, ov), UserInfoAnnotation, k.kind))
	default:
		who = submitter{user: user, groups: groups}
		dc = allow(RuleStamped)
	}
	dc, check := stamp(ctx, st, hook, k, req, ov, who, ui, how, dc, buf)
	if !dc.allowed {
		return dc
	}
	return queueChecked(ctx, st, k, req, ov, check, dc)
}

// queueChecked returns dc, for the identity id, with the queue check when
// enforceQueueACLs is on.
func queueChecked(ctx context.Context, st *handlerState, k *kindInfo, req *admissionv1.AdmissionRequest, ov *objectView, id submitter, dc decision) decision {
	dc.identity = id.user
	if st.cfg.EnforceQueue {
		// Objects a trusted controller makes (a Deployment's ReplicaSets and
		// pods, a CronJob's Jobs) are checked too, under the identity they
		// carry: the queue is the one their pods will run in (see targets),
		// so a workload passes only if its pods will, and pods that carry no
		// marker are checked against the default queue.
		return withQueueCheck(ctx, st, k, req, ov, nil, id, dc)
	}
	return dc
}

// untrustedHint explains who may set the annotation.
func untrustedHint(c *compiled, user string) string {
	if !c.TrustControllers && c.SystemUsers.Match(user) {
		return "the user matches systemUsers but trustControllers is false"
	}
	return "only controllers matching systemUsers, users matching externalUsers and members of groups matching " +
		"externalGroups may supply it; remove it and usher records your own identity"
}
