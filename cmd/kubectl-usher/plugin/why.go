package plugin

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/spf13/cobra"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/decision"
)

// WhyOutput is what why prints with -o json: an entry per object.
type WhyOutput struct {
	Objects []WhyObject `json:"objects"`
}

// WhyObject is what admission would decide for one object.
type WhyObject struct {
	Kind      string           `json:"kind"`
	Namespace string           `json:"namespace,omitempty"`
	Name      string           `json:"name"`
	DryRun    *DryRun          `json:"dryRun,omitempty"`   // the API server's answer to a server-side dry-run create
	Marker    *Marker          `json:"marker,omitempty"`   // the YuniKorn queue marker of the pods, if any
	Decision  *decision.Output `json:"decision,omitempty"` // usher's answer for the placement of the pods
}

// DryRun is the outcome of a server-side dry run.
type DryRun struct {
	Admitted bool     `json:"admitted"`
	Message  string   `json:"message,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Marker is a queue marker read from an object's pods.
type Marker struct {
	Kind  string `json:"kind"`
	Key   string `json:"key"`
	Value string `json:"value"`
	On    string `json:"on"`
}

type whyFlags struct {
	file             string
	dryRun, decision bool
}

func newWhy(o *options) *cobra.Command {
	var f whyFlags
	cmd := &cobra.Command{
		Use:   "why -f FILE",
		Short: "Show what admission would decide for a manifest, the queue placement chose, and the trail",
		Long: `For each object of the manifest (FILE, or - for standard input):

  - a server-side dry-run create through the API server, as you (or as
    --as, which the API server checks as impersonation): every admission
    webhook, usher's included, decides it, nothing is stored, and a denial
    comes back with usher's message;
  - usher's decision API with "place": true: the queue YuniKorn's
    placement rules choose for the object's pods (from the queue marker on
    the pods or the pod template, and the namespace tag), whether you may
    submit there, and the trail (the rules tried, then the ACLs consulted).

Exit status: 0 when every object would be admitted, 1 when one would be
refused (by the dry run; without it, by the decision), 2 on errors.`,
		Example: `  kubectl usher why -f job.yaml
  kubectl usher why -f deploy.yaml -n team-a -o json
  kubectl usher why -f job.yaml --dry-run=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.file == "" {
				return errors.New("give the manifest with -f FILE (- for standard input)")
			}
			if !f.dryRun && !f.decision {
				return errors.New("--dry-run=false and --decision=false leave nothing to ask")
			}
			objs, err := readManifest(f.file, o.streams.In)
			if err != nil {
				return err
			}
			return o.why(cmd.Context(), f, objs)
		},
	}
	o.addOutput(cmd)
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "filename", "f", "", "the manifest (YAML or JSON, one or more objects; - for standard input)")
	fl.BoolVar(&f.dryRun, "dry-run", true, "ask the API server for a server-side dry-run create")
	fl.BoolVar(&f.decision, "decision", true, "ask usher's decision API where placement puts the pods and why")
	return cmd
}

func readManifest(file string, stdin io.Reader) ([]*unstructured.Unstructured, error) {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(io.LimitReader(stdin, maxAnswer))
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for n := 1; ; n++ {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("%s: object %d: %w", file, n, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: object %d has no kind or apiVersion", file, n)
		}
		if u.GetKind() == "List" {
			return nil, fmt.Errorf("%s: object %d: a List; give the objects one by one", file, n)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no object", file)
	}
	return out, nil
}

func (o *options) why(ctx context.Context, f whyFlags, objs []*unstructured.Unstructured) error {
	defaultNS, _, err := o.clientConfig().Namespace()
	if err != nil {
		return err
	}
	var dyn dynamic.Interface
	var mapper meta.RESTMapper
	var warnings warningList
	if f.dryRun {
		cfg, err := o.restConfig(true)
		if err != nil {
			return err
		}
		if o.impersonating() {
			// The API server checks the impersonation on every request; asking
			// once first tells a refused impersonation from a refused object.
			if _, err := selfSubjectReview(ctx, cfg); err != nil {
				return fmt.Errorf("--as %s: %w", o.overrides.AuthInfo.Impersonate, err)
			}
		}
		cfg.WarningHandler = rest.NoWarnings{} // discovery's are not the objects'
		disc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return err
		}
		mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
		cfg.WarningHandler = &warnings // the dry runs', made one at a time
		if dyn, err = dynamic.NewForConfig(cfg); err != nil {
			return err
		}
	}
	var uc *usherClient
	var who Identity
	if f.decision {
		if who, _, err = o.subject(ctx); err != nil {
			return err
		}
		if uc, err = o.usherClient(); err != nil {
			return err
		}
	}
	var out WhyOutput
	refused := false
	for _, obj := range objs {
		ns := cmp.Or(obj.GetNamespace(), defaultNS)
		name := obj.GetName()
		if name == "" && obj.GetGenerateName() != "" {
			name = obj.GetGenerateName() + "*"
		}
		wo := WhyObject{Kind: obj.GetKind(), Namespace: ns, Name: name}
		if f.dryRun {
			warnings = nil
			dr, namespaced, err := dryRunCreate(ctx, dyn, mapper, obj, ns)
			if err != nil {
				return fmt.Errorf("%s %s: %w", obj.GetKind(), name, err)
			}
			dr.Warnings = warnings
			wo.DryRun = dr
			if !namespaced {
				wo.Namespace = ""
			}
			refused = refused || !dr.Admitted
		}
		if path, _ := podMetaPath(obj.GetKind()); f.decision && path != nil {
			wo.Marker = queueMarker(obj)
			req := decision.AccessRequest{Partition: o.partition, User: who.User, Groups: who.Groups, Action: "submit",
				Place: true, Explain: true, Tags: map[string]string{"namespace": ns}}
			if wo.Marker != nil {
				req.Queue = wo.Marker.Value
			}
			ans, err := uc.access(ctx, req)
			if err != nil {
				return fmt.Errorf("%s %s: %w", obj.GetKind(), name, err)
			}
			wo.Decision = ans
			if !f.dryRun {
				refused = refused || !ans.Allowed
			}
		}
		out.Objects = append(out.Objects, wo)
	}
	err = o.print(out, func(w io.Writer) {
		for i, wo := range out.Objects {
			if i > 0 {
				fmt.Fprintln(w)
			}
			printWhy(w, wo)
		}
	})
	return verdict(err, !refused)
}

func printWhy(w io.Writer, wo WhyObject) {
	where := wo.Name
	if wo.Namespace != "" {
		where = wo.Namespace + "/" + wo.Name
	}
	fmt.Fprintf(w, "%s %s\n", wo.Kind, where)
	if d := wo.DryRun; d != nil {
		fmt.Fprintln(w, "  admission (server-side dry run):", map[bool]string{true: "admitted", false: "refused"}[d.Admitted])
		if !d.Admitted {
			fmt.Fprintf(w, "    %s\n", d.Message)
		}
		for _, warn := range d.Warnings {
			fmt.Fprintf(w, "    warning: %s\n", warn)
		}
	}
	a := wo.Decision
	if a == nil {
		if path, _ := podMetaPath(wo.Kind); path == nil {
			fmt.Fprintf(w, "  usher's decision API: not asked (a %s is not a workload whose pods YuniKorn places)\n", wo.Kind)
		}
		return
	}
	if m := wo.Marker; m != nil {
		fmt.Fprintf(w, "  queue marker: %s %s=%q on the %s\n", m.Kind, m.Key, m.Value, m.On)
	} else {
		fmt.Fprintln(w, "  queue marker: none on the pods (the placement rules decide without one)")
	}
	if p := a.Placement; p != nil {
		if p.Placed {
			create := map[bool]string{true: " (created on submission)"}[p.Create]
			fmt.Fprintf(w, "  placement: %s%s (%s)\n", p.Queue, create, p.Rule)
			if p.Asked != "" {
				fmt.Fprintf(w, "    not %q, the queue the marker names (why: below)\n", p.Asked)
			}
		} else {
			fmt.Fprintf(w, "  placement: rejected (%s): %s\n", p.Rule, p.Reason)
		}
	}
	fmt.Fprintf(w, "  usher's decision for %s: %s\n", a.Identity.User, map[bool]string{true: "allowed", false: "denied"}[a.Allowed])
	fmt.Fprintf(w, "    %s\n", a.Reason)
	printTrail(w, "  ", a.Trail)
}

// dryRunCreate creates obj in ns with dryRun=All. A refusal by admission
// or by the API server (400, 403, 422) is an answer, not an error.
func dryRunCreate(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, obj *unstructured.Unstructured, ns string) (*DryRun, bool, error) {
	gvk := obj.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, false, fmt.Errorf("the API server does not serve %s: %w", gvk, err)
	}
	namespaced := m.Scope.Name() == meta.RESTScopeNameNamespace
	ri := dyn.Resource(m.Resource)
	var res dynamic.ResourceInterface = ri
	obj = obj.DeepCopy()
	if namespaced {
		obj.SetNamespace(ns)
		res = ri.Namespace(ns)
	}
	_, err = res.Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "kubectl-usher"})
	if err == nil {
		return &DryRun{Admitted: true}, namespaced, nil
	}
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		switch se.Status().Code {
		case http.StatusBadRequest, http.StatusForbidden, http.StatusUnprocessableEntity:
			return &DryRun{Admitted: false, Message: se.Status().Message}, namespaced, nil
		}
	}
	return nil, namespaced, err
}

// queueMarker reads the YuniKorn queue marker of the pods obj makes: on a
// pod its own, on a workload its pod template's (YuniKorn reads pods).
func queueMarker(obj *unstructured.Unstructured) *Marker {
	path, on := podMetaPath(obj.GetKind())
	if path == nil {
		return nil
	}
	// YuniKorn's default markers, in the order it reads them.
	for _, mk := range (settings.Config{}).Defaulted().QueueSources {
		// mk.Kind + "s": labels or annotations.
		v, ok, _ := unstructured.NestedString(obj.Object, slices.Concat(path, []string{mk.Kind + "s", mk.Key})...)
		if ok && v != "" && mk.Scheduler == "yunikorn" {
			return &Marker{Kind: mk.Kind, Key: mk.Key, Value: v, On: on}
		}
	}
	return nil
}

// podMetaPath is where the metadata of obj's pods is: the workloads the
// webhooks govern.
func podMetaPath(kind string) ([]string, string) {
	for _, w := range settings.Workloads {
		if w.Kind == kind {
			return strings.Split(w.Meta, "."), map[bool]string{true: "Pod", false: "pod template"}[kind == "Pod"]
		}
	}
	return nil, ""
}

// warningList keeps the API server's warnings (the webhooks' come back this way).
type warningList []string

func (l *warningList) HandleWarningHeader(code int, _ string, text string) {
	if code == 299 && text != "" {
		*l = append(*l, text)
	}
}
