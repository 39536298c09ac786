package admission

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// OwnerLookup reads the object at an API path, for the adoption rule.
type OwnerLookup func(ctx context.Context, path string) ([]byte, error)

// WithOwnerLookup sets how the adoption rule reads a new owner. Default:
// none, and every adoption it decides is denied.
func WithOwnerLookup(l OwnerLookup) Option { return func(h *Handler) { h.reads.owners = l } }

// adopt decides a trusted controller's UPDATE of ownerReferences: each
// owner it adds must carry the object's user.info or a user who may kill
// it, or bob's ReplicaSet could adopt alice's pod (docs/delete.md).
func adopt(ctx context.Context, st *State, rd *reads, k *kindInfo, req *admissionv1.AdmissionRequest, ov, nv *objectView) decision {
	var was, now []metav1.OwnerReference
	if ov.top.owners != "" {
		_ = json.Unmarshal([]byte(ov.top.owners), &was)
	}
	if nv.top.owners != "" {
		if err := json.Unmarshal([]byte(nv.top.owners), &now); err != nil {
			return deny(CauseInvalidObject, httpStatusBadRequest, "usher: request.object.metadata.ownerReferences: %v", err)
		}
	}
	np := nv.pod()
	for _, ref := range now {
		gv, _ := schema.ParseGroupVersion(ref.APIVersion)
		ok := lookupKind(gv.Group, ref.Kind)
		if ok == nil || ok.layout == layoutPod || slices.ContainsFunc(was, func(w metav1.OwnerReference) bool { return w.UID == ref.UID }) {
			continue
		}
		owner := ok.kind + " " + strconv.Quote(ref.Name)
		what := k.kind + " " + objectName(req, nv)
		if rd.owners == nil {
			return deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot tell whose %s is to adopt %s: usher has no cluster "+
				"credentials to read it (--kubeconfig, or the pod's service account); denied (usher fails closed)", owner, what)
		}
		path := "/apis/" + ok.apiVersion
		if ok.group == "" {
			path = "/api/" + ok.apiVersion
		}
		path += "/namespaces/" + url.PathEscape(req.Namespace) + "/" + strings.ToLower(ok.kind) + "s/" + url.PathEscape(ref.Name)
		raw, err := rd.owners(ctx, path)
		var meta metav1.PartialObjectMetadata
		if err == nil {
			err = json.Unmarshal(raw, &meta)
		}
		if err == nil && meta.UID != ref.UID {
			err = errors.New("it is another object than the owner reference names (uid " + strconv.Quote(string(meta.UID)) + ")")
		}
		var ownerView objectView
		if err == nil {
			err = view(st.cfg, ok, string(raw), &ownerView, nil, "the owner")
		}
		if err != nil {
			return deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot tell whose %s is to adopt %s: %v; denied (usher fails closed)", owner, what, err)
		}
		op := ownerView.pod()
		if op.has(slotUserInfo) == np.has(slotUserInfo) && op.val(slotUserInfo) == np.val(slotUserInfo) {
			continue // the same submitter's
		}
		ui, err := ParseUserInfo(op.val(slotUserInfo))
		if !op.has(slotUserInfo) || err != nil {
			dc := deny(CauseKillDenied, httpStatusForbidden, "usher: %s may not adopt %s: it has no valid annotation %s on its %s, "+
				"so it has no recorded owner whose right to delete %s could be checked", owner, what, UserInfoAnnotation, ok.where, what)
			dc.check = CheckKill
			return warnMode(st.cfg.DeleteWarn, RuleWarnedDelete, dc)
		}
		// Decided as if the owner's submitter deleted the object.
		as := *req
		as.UserInfo = authenticationv1.UserInfo{Username: ui.User, Groups: ui.Groups}
		if dc := killRule(ctx, st, rd, k, &as, ov, "let "+owner+" adopt"); !dc.allowed {
			return dc
		}
	}
	return allow(RuleUnchanged)
}
