package admission

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/usherhq/usher/admission/settings"
)

// ParentLookup reads the metadata of the parent of kind k named
// namespace/name, which the reference says has uid (of its annotations
// user.info and DirectoryGroupsAnnotation are read); nil when there is none.
type ParentLookup func(ctx context.Context, k settings.Kind, namespace, name, uid string) (*metav1.PartialObjectMetadata, error)

// WithParentLookup sets how propagators' parents are read. Default:
// none, and every propagation is denied.
func WithParentLookup(l ParentLookup) Option { return func(h *Handler) { h.reads.parents = l } }

// reads are the handler's reads of other cluster objects.
type reads struct {
	owners        OwnerLookup
	parents       ParentLookup
	clusterQueues ClusterQueueLookup
	parentQueue   ParentQueueLookup
}

// propagation is a propagator's CREATE: the parent its object names, and
// the parent's stamp.
type propagation struct {
	parent, by string // `SparkApplication "team-a/etl"`, the propagator
	info, dir  string // the parent's user.info and DirectoryGroupsAnnotation
	stamped    bool   // the parent carries user.info
}

func (p *propagation) String() string { return "propagated by " + p.by + " from " + p.parent }

// parentOf reads the parent of a propagator's object: its controller
// ownerReference of a kind p names, else the only one of such a kind, with
// the uid the API server holds (or, weakly, p's label); a Pod parent must
// be the pod the requester's token is bound to.
func parentOf(ctx context.Context, rd *reads, p *settings.CompiledPropagator, k *kindInfo, req *admissionv1.AdmissionRequest,
	ov *objectView, raw, podUID string) (*propagation, decision) {
	by, what := req.UserInfo.Username, place(k, req, ov)
	refuse := func(format string, args ...any) (*propagation, decision) {
		return nil, deny(CausePropagationDenied, httpStatusForbidden, "usher: %q propagates identities: "+format, append([]any{by}, args...)...)
	}
	var refs []metav1.OwnerReference
	if ov.top.owners != "" {
		if err := json.Unmarshal([]byte(ov.top.owners), &refs); err != nil {
			return nil, deny(CauseInvalidObject, httpStatusBadRequest, "usher: request.object.metadata.ownerReferences: %v", err)
		}
	}
	kinds := make([]string, len(p.Parents))
	for i, pk := range p.Parents {
		kinds[i] = pk.String()
	}
	// The controller reference of a parent kind, else the only reference
	// of one (YuniKorn's placeholders and some operators set no controller).
	var ref *metav1.OwnerReference
	var kind *settings.Kind
	candidates := 0
	for i := range refs {
		gv, _ := schema.ParseGroupVersion(refs[i].APIVersion)
		j := slices.IndexFunc(p.Parents, func(k settings.Kind) bool { return k.Group == gv.Group && k.Kind == refs[i].Kind })
		if j >= 0 {
			if candidates++; ref == nil || (refs[i].Controller != nil && *refs[i].Controller) {
				ref, kind = &refs[i], &p.Parents[j]
			}
		}
	}
	controller := ref != nil && ref.Controller != nil && *ref.Controller
	weak := ""
	if ref == nil && p.Label != "" {
		var o struct {
			Metadata struct{ Labels map[string]string }
		}
		_ = json.Unmarshal([]byte(raw), &o) // the API server sent it: valid
		if name := o.Metadata.Labels[p.Label]; name != "" {
			ref, kind, weak = &metav1.OwnerReference{Kind: p.Parents[0].Kind, Name: name}, &p.Parents[0], " (weak link: label "+p.Label+")"
		}
	}
	switch {
	case ref == nil:
		return refuse("%s names no parent of the kinds it copies from (%s) by an ownerReference, so there is no identity it may copy",
			what, strings.Join(kinds, ", "))
	case candidates > 1 && !controller:
		return refuse("%s names %d possible parents by ownerReferences and none is its controller: which identity it copies would be a guess", what, candidates)
	}
	pr := &propagation{by: by, parent: ref.Kind + " " + strconv.Quote(req.Namespace+"/"+ref.Name) + weak}
	switch {
	case kind.Group == "" && kind.Kind == "Pod" && !p.AnyPod && podUID != string(ref.UID):
		return refuse("it copies only from the pod its token is bound to (userInfo.extra %s %q), and %s is owned by %s (uid %q)",
			podUIDExtra, podUID, what, pr.parent, ref.UID)
	case rd.parents == nil:
		return nil, deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot read %s, the parent of %s: usher has no cluster credentials "+
			"to read it (--kubeconfig, or the pod's service account); denied (usher fails closed)", pr.parent, what)
	}
	got, err := rd.parents(ctx, *kind, req.Namespace, ref.Name, string(ref.UID))
	switch {
	case err != nil:
		return nil, deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot read %s, the parent of %s: %v; denied (usher fails closed)", pr.parent, what, err)
	case got == nil:
		return refuse("%s names parent %s, which does not exist", what, pr.parent)
	case weak == "" && got.UID != ref.UID:
		return refuse("%s names parent %s with uid %q, but that object's uid is %q", what, pr.parent, ref.UID, got.UID)
	}
	pr.info, pr.stamped = got.Annotations[UserInfoAnnotation]
	pr.dir = got.Annotations[DirectoryGroupsAnnotation]
	return pr, decision{}
}

// propagated decides that a propagator's CREATE runs as its parent's
// identity (as a kept stamp), if the object carries that identity or none;
// with rewrite (usher stamps the groups it decides), the parent's user
// with any groups, restamped as usher decides.
func propagated(pr *propagation, hook hookKind, k *kindInfo, req *admissionv1.AdmissionRequest, ov *objectView, pre *views, rewrite bool) (submitter, *UserInfo, stampHow, decision) {
	pm := ov.pod()
	u, err := ParseUserInfo(pr.info)
	invalid, listed := UserInfoAnnotation, []string(nil)
	if err == nil {
		invalid = DirectoryGroupsAnnotation
		listed, err = parseDirectoryGroups(pr.dir, pr.dir != "")
	}
	if err != nil {
		return submitter{}, nil, 0, deny(CausePropagationDenied, httpStatusForbidden, "usher: %s, the parent of %s, carries an invalid annotation %s: %v",
			pr.parent, place(k, req, ov), invalid, err)
	}
	who := submitter{user: u.User, groups: without(u.Groups, listed)}
	if !pm.has(slotUserInfo) {
		if hook == hookValidate {
			return who, nil, 0, notStamped(k, req, ov)
		}
		return who, nil, stampNew, decision{}
	}
	got, n, err := parseUserInfo(pm.val(slotUserInfo), pre.lim.max)
	if err == nil && n > len(got.Groups) {
		return who, nil, 0, pre.lim.refuse("annotation", CauseUserInfoInvalid, "annotation "+UserInfoAnnotation+" on "+place(k, req, ov), n)
	}
	if rewrite && err == nil && got.User == u.User {
		// What /mutate wrote, or writes again (a reinvocation, the
		// directory's answer changed since the parent's stamp): sameStamp.
		return who, &got, stampSame, decision{}
	}
	if err != nil || !got.sameIdentity(u.User, u.Groups) {
		return who, nil, 0, deny(CausePropagationDenied, httpStatusForbidden, "usher: %q may not set annotation %s naming %s on %s: it may only copy "+
			"the identity of its parent %s, which is user %q with %d groups", req.UserInfo.Username, UserInfoAnnotation, errString(pm.val(slotUserInfo)),
			place(k, req, ov), pr.parent, u.User, len(u.Groups))
	}
	if pm.has(slotDirGroups) && pm.val(slotDirGroups) != pr.dir {
		return who, nil, 0, deny(CausePropagationDenied, httpStatusForbidden, "usher: %q may not set annotation %s %s on %s: it may only copy that of its parent %s, %s",
			req.UserInfo.Username, DirectoryGroupsAnnotation, errString(pm.val(slotDirGroups)), place(k, req, ov), pr.parent, errString(pr.dir))
	}
	return who, &got, stampKept, decision{}
}
