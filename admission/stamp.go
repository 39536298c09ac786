package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/internal/jsonscan"
)

// DirectoryGroupsAnnotation lists, beside a stamp, the groups from usher's
// directory, looked up again for pods made from a template (docs/identity.md);
// "unavailable" marks a degraded stamp. It is guarded as user.info is.
const DirectoryGroupsAnnotation = settings.DirectoryGroupsAnnotation

const directoryUnavailable = "unavailable"

// stampHow says what usher may do with a CREATE's user.info.
type stampHow uint8

const (
	stampNew   stampHow = iota // no user.info: write one
	stampSame                  // user.info naming the requester: replace it when it differs from the decided one
	stampKept                  // user.info a trusted submitter set: re-resolve its directory groups
	stampNever                 // a ReplicaSet a controller creates: never changed
)

// stamp decides the identity of a CREATE allowed by dc, asking the
// IdentityResolver once about who, and returns dc with the patch (or the
// denial) and the identity the queue check uses.
func stamp(ctx context.Context, st *State, hook hookKind, k *kindInfo, req *admissionv1.AdmissionRequest, ov *objectView,
	who submitter, ui *UserInfo, how stampHow, dc decision) (decision, submitter) {
	c := st.cfg
	pm := ov.pod()
	check := who
	var in *identity.Info
	write := st.ident != nil && !c.StampGiven // stamp the decided groups
	if st.ident != nil && (how != stampNever || c.EnforceQueue) {
		got, err := st.ident.Identify(ctx, c.Partition, who.user, who.groups)
		switch {
		case err == nil:
			in = &got
			check = submitter{who.user, got.Groups, true}
			NoteLookup(ctx, got.Lookup.String())
		case c.EnforceQueue || (write && c.StampDeny):
			why := "enforceQueueACLs is on"
			if !c.EnforceQueue {
				why = "stampGroupsOnError is deny"
			}
			return deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot establish the groups of user %q to stamp on %s: %v; denied (%s)",
				who.user, place(k, req, ov), err, why), check
		case write && how != stampNever && hook == hookMutate:
			dc.degraded = true
			dc.warning = fmt.Sprintf("usher: the groups of user %q could not be established (%v): %s is stamped with the groups the API server gave only, "+
				"marked %s: %s (stampGroupsOnError: given)", who.user, err, place(k, req, ov), DirectoryGroupsAnnotation, directoryUnavailable)
		}
	}
	dc.decided = in
	if how == stampNever || (how == stampKept && !write) {
		return dc, check // kept as it is
	}
	groups, dir := who.groups, []byte(nil)
	if write {
		dir = []byte(directoryUnavailable)
		if in != nil {
			groups, dir = in.Groups, settings.AppendList(nil, directoryOnly(in))
		}
	} else if how != stampKept && pm.has(slotDirGroups) {
		return userInfoDenial(k, deny(CauseUserInfoForged, httpStatusForbidden, "usher: user %q may not set annotation %s on %s: only usher writes it, beside the user.info it stamps",
			req.UserInfo.Username, DirectoryGroupsAnnotation, place(k, req, ov))), check
	}
	info := settings.AppendUserInfo(nil, who.user, groups)
	if hook == hookValidate {
		// /validate writes nothing: the stamp must be the one /mutate writes.
		if how == stampSame {
			if msg := sameStamp(ui, pm, who, in, groups, write); msg != "" {
				return userInfoDenial(k, deny(CauseUserInfoForged, httpStatusForbidden, "usher: annotation %s on %s names user %q %s: the usher mutating webhook "+
					"did not stamp it, or the directory's answer changed between the two webhooks (retry)", UserInfoAnnotation, place(k, req, ov), who.user, msg)), check
			}
			if write && in == nil {
				dc.warning = fmt.Sprintf("usher: the groups of user %q could not be established: the groups %s lists on %s are not checked (stampGroupsOnError: given)",
					who.user, DirectoryGroupsAnnotation, place(k, req, ov))
			}
		}
		return dc, check
	}
	if how != stampNew && pm.val(slotUserInfo) == string(info) && (!write || (pm.has(slotDirGroups) && pm.val(slotDirGroups) == string(dir))) {
		return dc, check // already the stamp usher writes
	}
	if how == stampSame {
		dc.rule = RuleRestamped
	}
	if denied := stampLimits(k, req, ov, info, dir, len(groups)); denied.code != 0 {
		return denied, check
	}
	if len(k.templates) > 0 {
		dc.written = [2]string{string(info), string(dir)}
	}
	dc.patch = stampPatch(k, pm, info, dir)
	return dc, check
}

// sameStamp says what differs between ui (with pm's DirectoryGroupsAnnotation)
// and the stamp /mutate writes, "" for nothing; without the directory's
// answer, the groups not listed as the directory's must be the requester's.
func sameStamp(ui *UserInfo, pm *metaView, who submitter, in *identity.Info, groups []string, write bool) string {
	listed, err := parseDirectoryGroups(pm.val(slotDirGroups), pm.has(slotDirGroups))
	switch {
	case err != nil:
		return "beside an invalid " + DirectoryGroupsAnnotation
	case !write && pm.has(slotDirGroups):
		return "beside annotation " + DirectoryGroupsAnnotation + ", which only usher writes"
	case write && in == nil:
		if len(without(without(ui.Groups, listed), who.groups)) > 0 {
			return "with groups that neither the API server gave it nor " + DirectoryGroupsAnnotation + " lists"
		}
	case !ui.sameIdentity(who.user, groups):
		return fmt.Sprintf("with groups other than those usher decides (%d groups)", len(groups))
	case write && !(&UserInfo{Groups: listed}).sameIdentity("", directoryOnly(in)):
		return "with directory groups other than the directory's"
	}
	return ""
}

// directoryOnly returns the groups of in that did not come with the request.
func directoryOnly(in *identity.Info) []string {
	var out []string
	for i, g := range in.Groups {
		if in.SourceOf(i) != identity.SourceGiven {
			out = append(out, g)
		}
	}
	return out
}

// parseDirectoryGroups reads the value v of DirectoryGroupsAnnotation, if set.
func parseDirectoryGroups(v string, set bool) ([]string, error) {
	if !set || v == directoryUnavailable {
		return nil, nil
	}
	d := jsonscan.New(v)
	gs, _ := d.StringList(DirectoryGroupsAnnotation, len(v))
	d.End()
	if d.Err() == nil && gs == nil {
		d.Fail("null")
	}
	if slices.Contains(gs, "") {
		d.Fail("an empty group")
	}
	if d.Err() != nil {
		return nil, fmt.Errorf(`want a JSON array of group names or %q: %w`, directoryUnavailable, d.Err())
	}
	return gs, nil
}

// without returns the groups of list not in drop, in order.
func without(list, drop []string) []string {
	if len(drop) == 0 {
		return list
	}
	return slices.DeleteFunc(append([]string{}, list...), sets.New(drop...).Has)
}

// stampLimits denies a stamp past its limits or the API server's total of annotations.
func stampLimits(k *kindInfo, req *admissionv1.AdmissionRequest, ov *objectView, info, dir []byte, groups int) decision {
	if groups > settings.MaxStampGroups || len(info) > settings.MaxStampBytes {
		return userInfoDenial(k, deny(CauseUserInfoInvalid, httpStatusBadRequest, "usher: the identity to stamp on %s holds %d groups in %d bytes: "+
			"a stamp holds at most %d groups and %d KiB, and usher never cuts the list it decided with",
			place(k, req, ov), groups, len(info), settings.MaxStampGroups, settings.MaxStampBytes>>10))
	}
	pm := ov.pod()
	add := len(UserInfoAnnotation) + len(info)
	if dir != nil {
		add += len(DirectoryGroupsAnnotation) + len(dir)
	}
	// annotationsText is at least what the API server counts; only near
	// the limit is it counted exactly.
	if len(pm.annotationsText)+add <= apivalidation.TotalAnnotationSizeLimitB {
		return decision{}
	}
	ann := map[string]string{}
	_ = json.Unmarshal([]byte(pm.annotationsText), &ann) // the scanner has read it: valid
	ann[UserInfoAnnotation] = string(info)
	if dir != nil {
		ann[DirectoryGroupsAnnotation] = string(dir)
	}
	total := 0
	for key, v := range ann {
		total += len(key) + len(v)
	}
	if total <= apivalidation.TotalAnnotationSizeLimitB {
		return decision{}
	}
	return userInfoDenial(k, deny(CauseUserInfoInvalid, httpStatusBadRequest, "usher: the stamp (%d bytes) would bring the annotations of %s to %d bytes, "+
		"past the API server's limit of %d bytes for all annotations of an object; make the other annotations smaller",
		len(info)+len(dir), place(k, req, ov), total, apivalidation.TotalAnnotationSizeLimitB))
}
