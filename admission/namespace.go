package admission

import (
	"cmp"
	"context"
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// steeringAnnotations are the Namespace annotations yunikorn-k8shim reads
// (pkg/common/constants): the parent queue (its namespace.parentqueue
// tag), then the namespace queue's quotas and limits (namespace.max.* legacy).
var steeringAnnotations = []string{"yunikorn.apache.org/parentqueue", "yunikorn.apache.org/namespace.quota", "yunikorn.apache.org/namespace.guaranteed",
	"yunikorn.apache.org/namespace.maxApps", "yunikorn.apache.org/namespace.max.cpu", "yunikorn.apache.org/namespace.max.memory"}

// steering decides a CREATE or UPDATE of a Namespace under
// delegatedAdministration: setting, changing or removing the parent queue
// annotation needs admin on the queue it names (root without it), the
// others admin on the namespace's queue below it; each is judged at its
// nearest configured ancestor (docs/delegated-administration.md).
func steering(ctx context.Context, st *State, req *admissionv1.AdmissionRequest, obj, old string) decision {
	c, user := st.cfg, req.UserInfo.Username
	switch {
	case !c.Delegated || (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update):
		return allow(RuleKindNotHandled)
	case c.TrustedSetter(user, req.UserInfo.Groups):
		return allow(RuleTrustedSetter)
	case st.authz == nil:
		return deny(CauseDecisionFailed, httpStatusInternal, "usher: delegatedAdministration is on but no queue authorizer is configured: denied (usher fails closed)")
	}
	var nv, ov metav1.PartialObjectMetadata
	if err := json.Unmarshal([]byte(obj), &nv); err != nil {
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: request.object is not a Namespace: %v", err)
	}
	if old != "" && json.Unmarshal([]byte(old), &ov) != nil {
		return deny(CauseInvalidObject, httpStatusBadRequest, "usher: request.oldObject is not a Namespace")
	}
	parent := cmp.Or(nv.Annotations[steeringAnnotations[0]], "root")
	for _, key := range steeringAnnotations {
		v, had := ov.Annotations[key]
		if nv2, has := nv.Annotations[key]; had == has && v == nv2 {
			continue
		}
		queue := parent
		if key != steeringAnnotations[0] {
			queue = parent + "." + nv.Name
		}
		d, err := st.authz.AuthorizeSubmit(ctx, SubmitRequest{Partition: c.Partition, Queue: queue, User: user, Groups: req.UserInfo.Groups, Admin: true})
		if err != nil {
			return deny(CauseDecisionFailed, httpStatusInternal, "usher: cannot decide whether user %q may administer queue %q: %v; denied (usher fails closed)", user, queue, err)
		}
		if d.Allowed {
			continue
		}
		dc := deny(CauseQueueAdminDenied, httpStatusForbidden, "usher: user %q may not set annotation %s on namespace %q (delegatedAdministration): %s",
			user, key, nv.Name, d.Reason)
		dc.queue, dc.field = queue, "metadata.annotations["+key+"]"
		return warnMode(c.DelegatedWarn, RuleQueueAdmin, dc)
	}
	return allow(RuleQueueAdmin)
}
