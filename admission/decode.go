package admission

import (
	"errors"
	"strconv"

	"github.com/usherhq/usher/internal/jsonscan"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The only AdmissionReview version usher serves (admissionReviewVersions: ["v1"]).
const (
	reviewAPIVersion = "admission.k8s.io/v1"
	reviewKind       = "AdmissionReview"
)

// decodedReview is an AdmissionReview as far as the handler reads it; obj
// and old are the texts of request.object and request.oldObject ("" when
// absent or null), sharing memory with the body.
type decodedReview struct {
	apiVersion, kind string
	hasRequest       bool
	req              admissionv1.AdmissionRequest
	dryRun           bool
	obj, old         string
	views            views
}

// views are the request objects once parsed, and the group limit lim
// of request.userInfo, of which groups were counted.
type views struct {
	obj, old         objectView
	objDone, oldDone bool
	lim              *groupLimit
	groups           int
	podUID           string // userInfo.extra's podUIDExtra, when it holds exactly one value
}

// Member names of the objects decodeReview reads, by index.
var (
	reviewKeys  = jsonscan.NewKeys("apiVersion", "kind", "request")
	requestKeys = jsonscan.NewKeys("uid", "kind", "resource", "subResource", "name", "namespace", "operation", "userInfo",
		"object", "oldObject", "dryRun", "requestKind", "requestResource", "requestSubResource", "options")
	gvkKeys      = jsonscan.NewKeys("group", "version", "kind")
	gvrKeys      = jsonscan.NewKeys("group", "version", "resource")
	userInfoKeys = jsonscan.NewKeys("username", "groups", "extra", "uid")
)

const (
	reqUID = iota
	reqKind
	reqResource
	reqSubResource
	reqName
	reqNamespace
	reqOperation
	reqUserInfo
	reqObject
	reqOldObject
	reqDryRun
	reqRequestKind // the members from here on are checked, not kept
	reqRequestResource
	reqRequestSubResource
	reqOptions
)

// decodeReview decodes s sharing its memory; a duplicate member is an
// error, as encoding/json would keep the last.
func decodeReview(s string, r *decodedReview) error {
	d := jsonscan.New(s)
	if d.Null() {
		return errors.New("the body is null, want an AdmissionReview object")
	}
	m := d.Members("AdmissionReview", reviewKeys)
	for i := m.Next(); i >= 0; i = m.Next() {
		switch i {
		case 0:
			r.apiVersion = d.StringField("apiVersion")
		case 1:
			r.kind = d.StringField("kind")
		case 2:
			if !d.Null() {
				r.hasRequest = true
				decodeRequest(&d, r)
			}
		}
	}
	d.End()
	return d.Err()
}

func decodeRequest(d *jsonscan.Scanner, r *decodedReview) {
	req := &r.req
	m := d.Members("request", requestKeys)
	for i := m.Next(); i >= 0; i = m.Next() {
		switch i {
		case reqUID:
			req.UID = types.UID(d.StringField("request.uid"))
		case reqKind:
			decodeGroupVersion(d, "request.kind", gvkKeys, ".kind", &req.Kind.Group, &req.Kind.Version, &req.Kind.Kind)
		case reqResource:
			decodeGroupVersion(d, "request.resource", gvrKeys, ".resource", &req.Resource.Group, &req.Resource.Version, &req.Resource.Resource)
		case reqSubResource:
			req.SubResource = d.StringField("request.subResource")
		case reqName:
			req.Name = d.StringField("request.name")
		case reqNamespace:
			req.Namespace = d.StringField("request.namespace")
		case reqOperation:
			req.Operation = admissionv1.Operation(d.StringField("request.operation"))
		case reqUserInfo:
			decodeUserInfo(d, &req.UserInfo, &r.views)
		case reqObject:
			r.obj = rawValue(d)
		case reqOldObject:
			r.old = rawValue(d)
		case reqDryRun:
			if v, set := d.BoolField("request.dryRun"); set {
				r.dryRun = v
				req.DryRun = &r.dryRun
			}
		case reqRequestKind, reqRequestResource:
			var gv [3]string
			field, keys, last := "request.requestKind", gvkKeys, ".kind"
			if i == reqRequestResource {
				field, keys, last = "request.requestResource", gvrKeys, ".resource"
			}
			decodeGroupVersion(d, field, keys, last, &gv[0], &gv[1], &gv[2])
		case reqRequestSubResource:
			d.StringField("request.requestSubResource")
		case reqOptions:
			d.Skip()
		}
	}
}

// rawValue skips the value at the scanner and returns its text, "" for null.
func rawValue(d *jsonscan.Scanner) string {
	a, b := d.RawValue()
	if raw := d.Input()[a:b]; raw != "null" && d.Err() == nil {
		return raw
	}
	return ""
}

// decodeGroupVersion decodes {"group","version",<last>}; lastSuffix is "."+last.
func decodeGroupVersion(d *jsonscan.Scanner, field string, keys *jsonscan.Keys, lastSuffix string, group, version, lastVal *string) {
	m := d.MembersOrNull(field, keys)
	for i := m.Next(); i >= 0; i = m.Next() {
		switch i {
		case 0:
			*group = d.StringAt(field, ".group")
		case 1:
			*version = d.StringAt(field, ".version")
		case 2:
			*lastVal = d.StringAt(field, lastSuffix)
		}
	}
}

// podUIDExtra is the userInfo.extra of the pod a service-account token is bound to.
const podUIDExtra = "authentication.kubernetes.io/pod-uid"

// decodeUserInfo reads request.userInfo, keeping at most v.lim's groups
// (counting them all) and of extra only podUIDExtra.
func decodeUserInfo(d *jsonscan.Scanner, u *authenticationv1.UserInfo, v *views) {
	m := d.MembersOrNull("request.userInfo", userInfoKeys)
	for i := m.Next(); i >= 0; i = m.Next() {
		switch i {
		case 0:
			u.Username = d.StringField("request.userInfo.username")
		case 1:
			u.Groups, v.groups = d.StringList("request.userInfo.groups", v.lim.max)
		case 2:
			if d.Null() || !d.Object("request.userInfo.extra") {
				continue
			}
			for f, seen := true, false; ; {
				key, ok := d.Next(&f)
				if !ok {
					break
				}
				if key != podUIDExtra {
					d.StringList("request.userInfo.extra", 0)
					continue
				}
				if seen {
					d.Fail("duplicate member " + strconv.Quote(key))
				}
				seen = true
				if uids, n := d.StringList("request.userInfo.extra", 1); n == 1 {
					v.podUID = uids[0]
				}
			}
		case 3:
			d.StringField("request.userInfo.uid") // checked, not kept
		}
	}
}
