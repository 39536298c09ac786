package settings

import (
	"errors"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
)

// CustomResource is a custom resource kind the webhooks stamp and guard
// as a pod, on its own metadata and the templates it names (docs/operators.md).
type CustomResource struct {
	Group    string `yaml:"group"`
	Version  string `yaml:"version"`
	Kind     string `yaml:"kind"`
	Resource string `yaml:"resource"` // the plural, as in the API path
	// Templates are dotted paths to the objects that hold the
	// annotations an operator copies onto the pods it makes
	// (spec.driver, spec.rayClusterSpec.headGroupSpec.template.metadata);
	// "*" steps into every member of a map or item of a list.
	Templates []string `yaml:"templates"`
}

// Propagator is a requester trusted to copy its parent's user.info onto
// what it creates, never to write another.
type Propagator struct {
	Users Patterns `yaml:"users"` // matches the requester, as externalUsers does
	// Parents are the kinds it copies from: Pod, or GROUP/KIND of a
	// workload or of customResources (sparkoperator.k8s.io/SparkApplication).
	Parents []string `yaml:"parents"`
	// PodParents is which pods it may copy from: "bound" (default) only
	// the pod its service-account token is bound to (a Spark driver making
	// its executors); "any" a pod in the object's namespace (YuniKorn's
	// scheduler making placeholders for an application's first pod).
	PodParents string `yaml:"podParents"`
	// ParentLabel is a label naming the parent in the object's namespace,
	// for operators that set no ownerReference; it needs one parent kind,
	// not Pod, and is a weak link: no uid proves it.
	ParentLabel string `yaml:"parentLabel"`
}

// Values of podParents.
const (
	PodParentsBound = "bound"
	PodParentsAny   = "any"
)

// Values of unstampedParents.
const (
	UnstampedPropagator = "propagatorIdentity"
	UnstampedDeny       = "deny"
)

// Kind is a kind usher reads and stamps, as the API serves it.
type Kind struct {
	Group, Version, Resource, Kind string
	Templates                      [][]string // custom resources: the template paths, split at dots
}

// String is GROUP/KIND, or KIND for the core group.
func (k Kind) String() string {
	if k.Group == "" {
		return k.Kind
	}
	return k.Group + "/" + k.Kind
}

// APIVersion is GROUP/VERSION, or VERSION for the core group.
func (k Kind) APIVersion() string { return k.GVR().GroupVersion().String() }

// GVR is the kind's group, version and resource.
func (k Kind) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: k.Group, Version: k.Version, Resource: k.Resource}
}

// CompiledPropagator is a compiled Propagator.
type CompiledPropagator struct {
	Users   Matcher
	Parents []Kind
	AnyPod  bool   // podParents: any
	Label   string // parentLabel
}

// Propagator returns the first propagator user matches, or nil.
func (c *Compiled) Propagator(user string) *CompiledPropagator {
	if i := slices.IndexFunc(c.Propagators, func(p CompiledPropagator) bool { return p.Users.Match(user) }); i >= 0 {
		return &c.Propagators[i]
	}
	return nil
}

// Custom returns the custom resource kind group/kind, or nil.
func (c *Compiled) Custom(group, kind string) *Kind {
	if i := slices.IndexFunc(c.CustomKinds, func(k Kind) bool { return k.Group == group && k.Kind == kind }); i >= 0 {
		return &c.CustomKinds[i]
	}
	return nil
}

// compileOperators compiles customResources and propagators into out.
func compileOperators(c *Config, out *Compiled) (errs []error) {
	const crs = "admissionController.customResources"
	for i, r := range c.CustomResources {
		for _, f := range [...]struct{ name, v string }{{"group", r.Group}, {"version", r.Version}, {"kind", r.Kind}, {"resource", r.Resource}} {
			if f.v == "" || strings.TrimSpace(f.v) != f.v {
				errs = append(errs, settingErr(crs, i, f.name, "%q: required, without blanks", f.v))
			}
		}
		if r.Group != "" && len(validation.IsDNS1123Subdomain(r.Group)) > 0 || r.Group == "apps" || r.Group == "batch" {
			errs = append(errs, settingErr(crs, i, "group", "%q is not the API group of a custom resource", r.Group))
		}
		if r.Resource != strings.ToLower(r.Resource) {
			errs = append(errs, settingErr(crs, i, "resource", "%q: the resource is the lowercase plural of the API path", r.Resource))
		}
		if out.Custom(r.Group, r.Kind) != nil {
			errs = append(errs, settingErr(crs, i, "kind", "%s/%s is listed twice", r.Group, r.Kind))
		}
		k := Kind{Group: r.Group, Version: r.Version, Resource: r.Resource, Kind: r.Kind}
		for _, t := range r.Templates {
			if t == "" || strings.Contains(t, "..") || strings.TrimSpace(t) != t {
				errs = append(errs, settingErr(crs, i, "templates", "%q is not a dotted path such as spec.driver", t))
			}
			k.Templates = append(k.Templates, strings.Split(t, "."))
		}
		out.CustomKinds = append(out.CustomKinds, k)
	}
	const props = "admissionController.accessControl.propagators"
	for i, p := range c.AccessControl.Propagators {
		users, err := compilePatterns(props, p.Users)
		if se, ok := errors.AsType[*SettingError](err); ok {
			errs = append(errs, settingErr(props, i, "users", "%s", se.Msg))
		}
		if len(p.Users) == 0 {
			errs = append(errs, settingErr(props, i, "users", "required: the patterns of the service accounts that propagate"))
		}
		cp := CompiledPropagator{Users: users, AnyPod: p.PodParents == PodParentsAny, Label: p.ParentLabel}
		if p.ParentLabel != "" && (len(p.Parents) != 1 || p.Parents[0] == "Pod") {
			errs = append(errs, settingErr(props, i, "parentLabel", "needs exactly one parent kind, not Pod (pods are named by ownerReference and token)"))
		}
		if p.PodParents != "" && p.PodParents != PodParentsBound && !cp.AnyPod {
			errs = append(errs, settingErr(props, i, "podParents", "%q: want %s or %s", p.PodParents, PodParentsBound, PodParentsAny))
		}
		for _, name := range p.Parents {
			k, ok := out.kindNamed(name)
			if !ok {
				errs = append(errs, settingErr(props, i, "parents", "%q: want Pod or GROUP/KIND of customResources, whose own metadata "+
					"carries the stamp (a workload's own metadata is its submitter's to write)", name))
			}
			cp.Parents = append(cp.Parents, k)
		}
		if len(p.Parents) == 0 {
			errs = append(errs, settingErr(props, i, "parents", "required: the kinds whose stamp it may copy"))
		}
		out.Propagators = append(out.Propagators, cp)
	}
	return errs
}

// kindNamed resolves Pod or GROUP/KIND of a custom resource: the kinds
// stamped on their own metadata (a workload's stamp is on its template).
func (c *Compiled) kindNamed(name string) (Kind, bool) {
	if name == "Pod" {
		return Kind{Version: "v1", Resource: "pods", Kind: name}, true
	}
	group, kind, _ := strings.Cut(name, "/")
	if k := c.Custom(group, kind); k != nil {
		return *k, true
	}
	return Kind{}, false
}
