package admission

import (
	"errors"
	"fmt"

	"github.com/usherhq/usher/internal/jsonscan"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// reviewAPIVersion and reviewKind identify the only AdmissionReview version
// usher serves. The API server sends it when the webhook configuration lists
// admissionReviewVersions: ["v1"].
const (
	reviewAPIVersion = "admission.k8s.io/v1"
	reviewKind       = "AdmissionReview"
)

// decodedReview is an AdmissionReview decoded by decodeReview. The request
// fields live in req (k8s.io/api types); obj and old are the JSON texts of
// request.object and request.oldObject ("" when absent or null), which are
// also set as req.Object.Raw and req.OldObject.Raw, sharing memory with the
// body.
type decodedReview struct {
	apiVersion, kind string
	hasRequest       bool
	req              admissionv1.AdmissionRequest
	reqKind          metav1.GroupVersionKind
	reqResource      metav1.GroupVersionResource
	dryRun           bool
	obj, old         string

	// views holds the objects parsed during the same pass, when decodeReview
	// was given a configuration and request.kind came before them (the API
	// server's order). An object that does not parse is left for the
	// handler, which parses it again to report the error.
	views views
}

// views are the request objects, parsed ahead by decodeReview, and the
// review's group limit: lim (nil: none) caps the groups decodeReview
// keeps of request.userInfo, and groups is how many it counted.
type views struct {
	obj, old         objectView
	objDone, oldDone bool
	lim              *groupLimit
	groups           int
}

// Member names of the objects decodeReview reads, by index.
var (
	reviewKeys  = jsonscan.NewKeys("apiVersion", "kind", "request")
	requestKeys = jsonscan.NewKeys("uid", "kind", "resource", "subResource", "requestKind", "requestResource",
		"requestSubResource", "name", "namespace", "operation", "userInfo", "object", "oldObject", "dryRun", "options")
	gvkKeys      = jsonscan.NewKeys("group", "version", "kind")
	gvrKeys      = jsonscan.NewKeys("group", "version", "resource")
	userInfoKeys = jsonscan.NewKeys("username", "uid", "groups", "extra")
)

const (
	reqUID = iota
	reqKind
	reqResource
	reqSubResource
	reqRequestKind
	reqRequestResource
	reqRequestSubResource
	reqName
	reqNamespace
	reqOperation
	reqUserInfo
	reqObject
	reqOldObject
	reqDryRun
	reqOptions
)

// decodeReview decodes an admission.k8s.io/v1 AdmissionReview. s is the
// body as a string and body the same bytes: strings in the result are
// substrings of s, raw objects are sub-slices of body. A duplicate member in
// any object the webhook interprets is an error (encoding/json would keep
// the last one; usher refuses to guess).
func decodeReview(s string, body []byte, r *decodedReview, c *compiled) error {
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
				decodeRequest(&d, body, r, c)
			}
		}
	}
	d.End()
	return d.Err()
}

func decodeRequest(d *jsonscan.Scanner, body []byte, r *decodedReview, c *compiled) {
	req := &r.req
	s := d.Input()
	m := d.Members("request", requestKeys)
	for i := m.Next(); i >= 0; i = m.Next() {
		switch i {
		case reqUID:
			req.UID = types.UID(d.StringField("request.uid"))
		case reqKind:
			decodeGVK(d, "request.kind", &req.Kind)
		case reqResource:
			decodeGVR(d, "request.resource", &req.Resource)
		case reqSubResource:
			req.SubResource = d.StringField("request.subResource")
		case reqRequestKind:
			if !d.Null() {
				req.RequestKind = &r.reqKind
				decodeGVK(d, "request.requestKind", req.RequestKind)
			}
		case reqRequestResource:
			if !d.Null() {
				req.RequestResource = &r.reqResource
				decodeGVR(d, "request.requestResource", req.RequestResource)
			}
		case reqRequestSubResource:
			req.RequestSubResource = d.StringField("request.requestSubResource")
		case reqName:
			req.Name = d.StringField("request.name")
		case reqNamespace:
			req.Namespace = d.StringField("request.namespace")
		case reqOperation:
			req.Operation = admissionv1.Operation(d.StringField("request.operation"))
		case reqUserInfo:
			decodeUserInfo(d, &req.UserInfo, &r.views)
		case reqObject:
			a, b := objectAhead(d, c, m.Seen(reqKind), req, &r.views.obj, &r.views.objDone)
			if raw := s[a:b]; raw != "null" && d.Err() == nil {
				r.obj = raw
				req.Object.Raw = body[a:b:b]
			}
		case reqOldObject:
			a, b := objectAhead(d, c, m.Seen(reqKind), req, &r.views.old, &r.views.oldDone)
			if raw := s[a:b]; raw != "null" && d.Err() == nil {
				r.old = raw
				req.OldObject.Raw = body[a:b:b]
			}
		case reqDryRun:
			if v, set := d.BoolField("request.dryRun"); set {
				r.dryRun = v
				req.DryRun = &r.dryRun
			}
		case reqOptions:
			a, b := d.RawValue()
			if raw := s[a:b]; raw != "null" && d.Err() == nil {
				req.Options.Raw = body[a:b:b]
			}
		}
	}
}

// objectAhead skips the object value at the scanner's position and returns
// its offsets. When c is set, request.kind is known and names a handled
// kind, it parses the object into o on the way (done = true); if that
// fails it rewinds and only skips, leaving the error to the handler.
func objectAhead(d *jsonscan.Scanner, c *compiled, kindSeen bool, req *admissionv1.AdmissionRequest, o *objectView, done *bool) (start, end int) {
	start = d.SkipSpace()
	if c != nil && kindSeen && d.Err() == nil && d.Peek() == '{' {
		if k := lookupKind(req.Kind.Group, req.Kind.Kind); k != nil {
			saved := *d
			objectValue(d, k, &c.wantKeys, o)
			if d.Err() == nil {
				*done = true
				return start, d.Pos()
			}
			*d = saved
			*o = objectView{}
		}
	}
	d.Skip()
	return start, d.Pos()
}

func decodeGVK(d *jsonscan.Scanner, field string, gvk *metav1.GroupVersionKind) {
	decodeGroupVersion(d, field, gvkKeys, ".kind", &gvk.Group, &gvk.Version, &gvk.Kind)
}

func decodeGVR(d *jsonscan.Scanner, field string, gvr *metav1.GroupVersionResource) {
	decodeGroupVersion(d, field, gvrKeys, ".resource", &gvr.Group, &gvr.Version, &gvr.Resource)
}

// decodeGroupVersion decodes {"group","version",<last>} into the three
// strings; lastSuffix is "."+last, spelt out so that no string is built.
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

// decodeUserInfo reads request.userInfo, keeping at most v.lim's groups
// and counting them all in v.groups. Extra is checked, not kept: no rule
// reads it, and a map of its keys would cost many times the body.
func decodeUserInfo(d *jsonscan.Scanner, u *authenticationv1.UserInfo, v *views) {
	m := d.MembersOrNull("request.userInfo", userInfoKeys)
	for i := m.Next(); i >= 0; i = m.Next() {
		switch i {
		case 0:
			u.Username = d.StringField("request.userInfo.username")
		case 1:
			u.UID = d.StringField("request.userInfo.uid")
		case 2:
			u.Groups, v.groups = d.StringList("request.userInfo.groups", v.lim.keep())
		case 3:
			if d.Null() || !d.Object("request.userInfo.extra") {
				continue
			}
			for f := true; ; {
				if _, ok := d.Next(&f); !ok {
					break
				}
				d.StringList("request.userInfo.extra", 0)
			}
		}
	}
}

// parseBinding reads the labels and annotations usher guards from a v1
// Binding into m.
// bindingKeys are the members of a Binding that parseBinding reads.
var bindingKeys = jsonscan.NewKeys("apiVersion", "kind", "metadata")

func parseBinding(s string, c *compiled, meta *metaView) error {
	if s == "" {
		return fmt.Errorf("request.object is empty: want a Binding")
	}
	d := jsonscan.New(s)
	var apiVersion, kind string
	m := d.Members("request.object", bindingKeys)
	for i := m.Next(); i >= 0; i = m.Next() {
		switch i {
		case 0:
			apiVersion = d.StringField("apiVersion")
		case 1:
			kind = d.StringField("kind")
		case 2:
			parseMeta(&d, &topMetaPaths, &c.wantKeys, meta)
		}
	}
	d.End()
	if d.Err() != nil {
		return fmt.Errorf("request.object is not a valid Binding: %w", d.Err())
	}
	if kind != "Binding" || apiVersion != "v1" {
		return fmt.Errorf("request.object is a %s, want v1 Binding as request.kind says", describeGVK(apiVersion, kind))
	}
	return nil
}
