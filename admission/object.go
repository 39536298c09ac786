package admission

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/internal/jsonscan"
)

// layout says where a kind keeps the metadata of the pods it creates.
type layout uint8

const (
	layoutPod      layout = iota // /metadata
	layoutTemplate               // /spec/template/metadata
	layoutCronJob                // /spec/jobTemplate/spec/template/metadata
)

// kindInfo describes one kind the webhook handles.
type kindInfo struct {
	group, kind string
	apiVersion  string
	layout      layout
	// metaPath points at the pods' metadata, which where names in messages.
	metaPath, where string
	// JSON pointers of the annotations, user.info and DirectoryGroupsAnnotation.
	annotationsPath, annotationPath, dirPath string
	// templates are a custom resource's template paths (settings.Kind).
	templates [][]string
}

func (k *kindInfo) setPaths() {
	k.annotationsPath = k.metaPath + "/annotations"
	k.annotationPath = k.annotationsPath + "/" + escapePointer(UserInfoAnnotation)
	k.dirPath = k.annotationsPath + "/" + escapePointer(DirectoryGroupsAnnotation)
}

func init() {
	for i := range kinds {
		kinds[i].setPaths()
	}
}

var kinds = [...]kindInfo{
	{group: "", kind: "Pod", apiVersion: "v1", layout: layoutPod, metaPath: "/metadata", where: "pod"},
	{group: "apps", kind: "Deployment", apiVersion: "apps/v1", layout: layoutTemplate, metaPath: "/spec/template/metadata", where: "pod template"},
	{group: "apps", kind: "ReplicaSet", apiVersion: "apps/v1", layout: layoutTemplate, metaPath: "/spec/template/metadata", where: "pod template"},
	{group: "apps", kind: "DaemonSet", apiVersion: "apps/v1", layout: layoutTemplate, metaPath: "/spec/template/metadata", where: "pod template"},
	{group: "apps", kind: "StatefulSet", apiVersion: "apps/v1", layout: layoutTemplate, metaPath: "/spec/template/metadata", where: "pod template"},
	{group: "batch", kind: "Job", apiVersion: "batch/v1", layout: layoutTemplate, metaPath: "/spec/template/metadata", where: "pod template"},
	{group: "batch", kind: "CronJob", apiVersion: "batch/v1", layout: layoutCronJob, metaPath: "/spec/jobTemplate/spec/template/metadata", where: "job template's pod template"},
	{group: "", kind: "ReplicationController", apiVersion: "v1", layout: layoutTemplate, metaPath: "/spec/template/metadata", where: "pod template"},
}

// lookupKind returns the handled kind, or nil; the group matters (Volcano's Job is not a batch/v1 Job).
func lookupKind(group, kind string) *kindInfo { return findKind(kinds[:], group, kind) }

func findKind(ks []kindInfo, group, kind string) *kindInfo {
	if i := slices.IndexFunc(ks, func(k kindInfo) bool { return k.kind == kind && k.group == group }); i >= 0 {
		return &ks[i]
	}
	return nil
}

// Slots in metaView.vals.
const (
	slotUserInfo  = 0 // annotation yunikorn.apache.org/user.info
	slotLegacy    = 1 // label yunikorn.apache.org/username
	slotModifyACL = 2 // annotation modifyACLAnnotation (read when enforceDeleteACLs is on)
	slotDirGroups = 3 // annotation usher.io/directory-groups
	slotMarkers   = 4 // first queue marker (index = slotMarkers + source index)
)

// compiled is the settings a review runs with and the decoder's tables.
type compiled struct {
	*settings.Compiled
	wantKeys
	custom []kindInfo // the custom resources, read as a pod is: their own metadata
}

// lookupKind is lookupKind, then c's custom resources.
func (c *compiled) lookupKind(group, kind string) *kindInfo {
	return cmp.Or(lookupKind(group, kind), findKind(c.custom, group, kind))
}

// wantKeys are the labels and annotations the decoder reads, and the number of slots.
type wantKeys struct {
	labels, annotations []wantKey
	slots               int
}

func compile(c *settings.Compiled) *compiled {
	w := wantKeys{slots: slotMarkers + len(c.Sources),
		annotations: []wantKey{{UserInfoAnnotation, slotUserInfo}, {DirectoryGroupsAnnotation, slotDirGroups}},
		labels:      []wantKey{{LegacyUserLabel, slotLegacy}}}
	if c.EnforceDelete {
		w.annotations = append(w.annotations, wantKey{c.ModifyACLKey, slotModifyACL})
	}
	for i, s := range c.Sources {
		k := wantKey{s.Key, slotMarkers + i}
		switch {
		case !c.EnforceQueue && !c.EnforceDelete:
		case s.Annotation:
			w.annotations = append(w.annotations, k)
		default:
			w.labels = append(w.labels, k)
		}
	}
	out := &compiled{Compiled: c, wantKeys: w}
	for _, ck := range c.CustomKinds {
		k := kindInfo{group: ck.Group, kind: ck.Kind, apiVersion: ck.APIVersion(), layout: layoutPod, metaPath: "/metadata",
			where: ck.Kind, templates: ck.Templates}
		k.setPaths()
		out.custom = append(out.custom, k)
	}
	return out
}

// metaView is what the webhook reads from one ObjectMeta.
type metaView struct {
	present         bool // metadata is an object
	annotations     bool // metadata.annotations is an object
	deleting        bool // metadata.deletionTimestamp is set
	name            string
	owners          string // the text of metadata.ownerReferences ("" when absent, null or empty)
	genName         string
	annotationsText string
	vals            []slotVal // the wanted keys found, by slot
}

type slotVal struct {
	s  string
	ok bool
}

func (m *metaView) has(slot int) bool { return slot < len(m.vals) && m.vals[slot].ok }

func (m *metaView) val(slot int) string {
	if slot < len(m.vals) {
		return m.vals[slot].s
	}
	return ""
}

// objectView is what the webhook reads from a request object.
type objectView struct {
	apiVersion, kind string
	top              metaView // the object's own metadata
	job              metaView // CronJob only: spec.jobTemplate.metadata
	tmpl             metaView // workloads: the pod template's metadata
	hasTemplate      bool     // workloads: the pod template is an object
	layout           layout
}

// pod returns the metadata the pods will carry.
func (o *objectView) pod() *metaView {
	if o.layout == layoutPod {
		return &o.top
	}
	return &o.tmpl
}

// wantKey is a label or annotation key the webhook reads, and its slot.
type wantKey struct {
	key  string
	slot int
}

// stampKeys are the annotations usher writes.
var stampKeys = [...]wantKey{{UserInfoAnnotation, slotUserInfo}, {DirectoryGroupsAnnotation, slotDirGroups}}

// Member names of the objects parseObject reads, by index.
var (
	objectKeys      = jsonscan.NewKeys("apiVersion", "kind", "metadata", "spec")
	workloadKeys    = jsonscan.NewKeys("template")
	cronSpecKeys    = jsonscan.NewKeys("jobTemplate")
	jobTemplateKeys = jsonscan.NewKeys("metadata", "spec")
	podTemplateKeys = jsonscan.NewKeys("metadata", "spec")
	metaKeys        = jsonscan.NewKeys("name", "generateName", "labels", "annotations", "deletionTimestamp", "ownerReferences")
)

// parseObject reads a request object of kind k, checking its kind and the
// types on the path to the pod metadata, the rest for JSON syntax only
// (the API server has decoded it); field names it in errors.
func parseObject(s string, k *kindInfo, w *wantKeys, o *objectView, field string) error {
	if s == "" {
		return fmt.Errorf("%s is empty: want a %s", field, k.kind)
	}
	d := jsonscan.New(s)
	if d.Peek() != '{' {
		d.Object("")
		return fmt.Errorf("%s is not a JSON object: %w", field, d.Err())
	}
	o.layout = k.layout
	m := d.Members("", objectKeys)
	for i := m.Next(); i >= 0; i = m.Next() {
		switch i {
		case 0:
			o.apiVersion = d.StringField("apiVersion")
		case 1:
			o.kind = d.StringField("kind")
		case 2:
			parseMeta(&d, "metadata", w, &o.top)
		case 3:
			switch k.layout {
			case layoutPod:
				objectOrNull(&d, "spec", "")
			case layoutTemplate:
				parseWorkloadSpec(&d, "spec", w, o)
			case layoutCronJob:
				parseCronSpec(&d, w, o)
			}
		}
	}
	d.End()
	switch {
	case d.Err() != nil:
		return fmt.Errorf("%s is not a valid %s: %w", field, k.kind, d.Err())
	case o.kind == k.kind && o.apiVersion == k.apiVersion:
		return nil
	case o.kind == "" && o.apiVersion == "":
		return fmt.Errorf("%s is a object without apiVersion and kind, want %s %s as request.kind says", field, k.apiVersion, k.kind)
	}
	return fmt.Errorf("%s is a %q %q, want %s %s as request.kind says", field, o.apiVersion, o.kind, k.apiVersion, k.kind)
}

// objectOrNull checks that the value (field+sub) is an object or null and skips it.
func objectOrNull(d *jsonscan.Scanner, field, sub string) {
	switch d.Peek() {
	case '{', 'n':
		d.Skip()
	default:
		d.FailType(field, sub, "an object")
	}
}

// parseWorkloadSpec reads the workload spec at path spec; errors name the paths below it.
func parseWorkloadSpec(d *jsonscan.Scanner, spec string, w *wantKeys, o *objectView) {
	m := d.MembersOrNull(spec, workloadKeys)
	for i := m.Next(); i >= 0; i = m.Next() {
		parsePodTemplate(d, spec+".template", w, o)
	}
}

func parseCronSpec(d *jsonscan.Scanner, w *wantKeys, o *objectView) {
	m := d.MembersOrNull("spec", cronSpecKeys)
	for i := m.Next(); i >= 0; i = m.Next() {
		jm := d.MembersOrNull("spec.jobTemplate", jobTemplateKeys)
		for j := jm.Next(); j >= 0; j = jm.Next() {
			switch j {
			case 0:
				parseMeta(d, "spec.jobTemplate.metadata", w, &o.job)
			case 1:
				parseWorkloadSpec(d, "spec.jobTemplate.spec", w, o)
			}
		}
	}
}

func parsePodTemplate(d *jsonscan.Scanner, tmpl string, w *wantKeys, o *objectView) {
	if d.Null() {
		return
	}
	m := d.Members(tmpl, podTemplateKeys)
	o.hasTemplate = d.Err() == nil
	for i := m.Next(); i >= 0; i = m.Next() {
		switch i {
		case 0:
			parseMeta(d, tmpl+".metadata", w, &o.tmpl)
		case 1:
			objectOrNull(d, tmpl, ".spec")
		}
	}
}

// parseMeta reads the metadata at path p into m.
func parseMeta(d *jsonscan.Scanner, p string, w *wantKeys, m *metaView) {
	if d.Null() {
		return
	}
	mm := d.Members(p, metaKeys)
	m.present = d.Err() == nil
	for i := mm.Next(); i >= 0; i = mm.Next() {
		switch i {
		case 0:
			m.name = d.StringAt(p, ".name")
		case 1:
			m.genName = d.StringAt(p, ".generateName")
		case 2:
			parseStringMap(d, p+".labels", w.labels, w.slots, m)
		case 3:
			m.annotations = d.Peek() == '{'
			start := d.Pos()
			parseStringMap(d, p+".annotations", w.annotations, w.slots, m)
			m.annotationsText = d.Input()[start:d.Pos()]
		case 4:
			m.deleting = d.StringAt(p, ".deletionTimestamp") != ""
		case 5:
			if c := d.Peek(); c != '[' && c != 'n' {
				d.FailType(p, ".ownerReferences", "an array")
				return
			}
			a, b := d.RawValue()
			if raw := d.Input()[a:b]; raw != "null" && raw != "[]" {
				m.owners = raw
			}
		}
	}
}

// parseStringMap reads a map of strings (null as "", as encoding/json
// does) into m's wanted slots; a wanted key twice is an error.
func parseStringMap(d *jsonscan.Scanner, field string, want []wantKey, slots int, m *metaView) {
	if d.Null() || !d.Object(field) {
		return
	}
	first := true
	for {
		key, ok := d.Next(&first)
		if !ok {
			return
		}
		slot := -1
		for i := range want {
			if want[i].key == key {
				slot = want[i].slot
				break
			}
		}
		c := d.Peek()
		if c != '"' && c != 'n' {
			d.FailType(field, "["+strconv.Quote(key)+"]", "a string")
			return
		}
		if slot < 0 {
			d.Skip()
			continue
		}
		v := d.StringField(field)
		if m.has(slot) {
			d.Fail("duplicate key " + strconv.Quote(key) + " in " + field)
			return
		}
		if m.vals == nil {
			m.vals = make([]slotVal, slots)
		}
		m.vals[slot] = slotVal{v, true}
	}
}

// place names where user.info lives: `the pod template of Deployment "team-a/web"`.
func place(k *kindInfo, req *admissionv1.AdmissionRequest, o *objectView) string {
	if k.layout == layoutPod {
		return k.kind + " " + objectName(req, o)
	}
	return "the " + k.where + " of " + k.kind + " " + objectName(req, o)
}

// objectName renders "namespace/name" quoted, for messages.
func objectName(req *admissionv1.AdmissionRequest, o *objectView) string {
	name := nameOf(req, o)
	if req.Namespace != "" {
		name = req.Namespace + "/" + name
	}
	return strconv.Quote(name)
}

// nameOf is the request's name, else the object's (a collection delete), else its generateName and "*".
func nameOf(req *admissionv1.AdmissionRequest, o *objectView) string {
	switch {
	case req.Name != "":
		return req.Name
	case o.top.name == "" && o.top.genName != "":
		return o.top.genName + "*"
	}
	return o.top.name
}

// view parses s into o unless done (nil: never) says it has been.
func view(c *compiled, k *kindInfo, s string, o *objectView, done *bool, field string) error {
	if done != nil && *done {
		return nil
	}
	*o = objectView{}
	err := parseObject(s, k, &c.wantKeys, o, field)
	if done != nil {
		*done = err == nil
	}
	return err
}
