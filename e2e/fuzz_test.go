//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/policy"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// fuzzConfig is the configuration the fuzzer runs usher with: queue and
// kill rule enforced, ext a trusted external user, carol a cluster admin
// (partition adminacl, her group spark-submitters), bob the admin of
// root.ops. root itself grants nothing, so a pod without a marker runs in
// root.default, open to alice, bob and dave only.
const fuzzConfig = `partitions:
  - name: default
    adminacl: " spark-submitters"
    queues:
      - name: root
        queues:
          - name: default
            submitacl: "alice,bob,dave"
          - name: dev
            submitacl: " dev"
          - name: ops
            submitacl: " ops"
            adminacl: bob
admissionController:
  enforceDeleteACLs: true
  enforceQueueACLs: true
  accessControl:
    externalUsers: "^ext$"
`

// fuzzMemoryCeiling is the most memory (VmHWM) usher may use, the ceiling
// cmd/usher-load holds usher serve to under attack.
const fuzzMemoryCeiling = 160 << 20

const (
	modifyACL      = "usher.io/modify-acl"
	directoryGroup = "usher.io/directory-groups"
	queueLabel     = "queue"
	operatorSA     = "system:serviceaccount:kube-system:fuzz-operator"
)

// fuzzStep is one request of a sequence. Op is create, update,
// patch-json, patch-merge, patch-strategic, apply, delete, evict, scale,
// status, deletecollection (of the namespace's pods) or bind (a Binding
// carrying the edit's annotations and labels); Kind is pod,
// deploy, rs or job and Slot numbers the object (its name is the kind's
// letter and the slot; below 0, a pod by rank, see nthPod). An edit
// changes one thing: Ann (the user.info variant, see run.annotation;
// "remove"), Queue
// (the queue label; "-" removes it), ACL (the modify ACL; "-" removes
// it), Owner (an ownerReference to the object named, "x" to one that does
// not exist), or, with none of them, a harmless label. A create uses Ann,
// Queue and ACL, N replicas and the label app=a<Sel>; a delete uses N as
// the propagation (0 background, 1 orphan, 2 foreground).
type fuzzStep struct {
	Op, Actor, Kind        string
	Slot                   int
	Ann, Queue, ACL, Owner string
	N, Sel                 int
}

// String renders the step as a Go composite literal, for the table of
// fuzz_regress_test.go.
func (s fuzzStep) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{Op: %q, Actor: %q, Kind: %q, Slot: %d", s.Op, s.Actor, s.Kind, s.Slot)
	for _, f := range []struct{ k, v string }{{"Ann", s.Ann}, {"Queue", s.Queue}, {"ACL", s.ACL}, {"Owner", s.Owner}} {
		if f.v != "" {
			fmt.Fprintf(&b, ", %s: %q", f.k, f.v)
		}
	}
	if s.N != 0 {
		fmt.Fprintf(&b, ", N: %d", s.N)
	}
	if s.Sel != 0 {
		fmt.Fprintf(&b, ", Sel: %d", s.Sel)
	}
	return b.String() + "}"
}

func (s fuzzStep) name() string { return s.Kind[:1] + strconv.Itoa(s.Slot) }

// fuzzActors: the tenants with their own credentials, admin
// (system:masters), users admin impersonates (dave in dev, erin in ops,
// "Alice", alice's name in another case) and a kube-system service
// account, a trusted controller under the default systemUsers.
var fuzzActors = []struct {
	name, impersonate string
	groups            []string
}{
	{name: Alice}, {name: Bob}, {name: Carol}, {name: Ext}, {name: Admin},
	{name: "dave", impersonate: "dave", groups: []string{"dev"}},
	{name: "erin", impersonate: "erin", groups: []string{"ops"}},
	{name: "Alice", impersonate: "Alice", groups: []string{"dev"}},
	{name: "op", impersonate: operatorSA, groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}},
}

var (
	fuzzOps = []string{"create", "create", "create", "create", "create", "update", "update", "patch-json", "patch-merge",
		"patch-strategic", "apply", "delete", "delete", "evict", "scale", "status", "status", "deletecollection", "bind"}
	fuzzKinds   = []string{"pod", "pod", "pod", "deploy", "rs", "job"}
	fuzzQueues  = []string{"", "", "", "root.dev", "root.dev", "root.ops", "root.ops", "root.default", "root.nope"}
	fuzzACLs    = []string{"", "", "", "bob", " ops", "*", " "}
	fuzzCreates = []string{"", "", "", "", "", "", "", "self", "self", "alice", "bob", "case", "fold", "malformed", "extra", "empty", "dg"}
	fuzzEdits   = []string{"remove", "self", "alice", "bob", "case", "fold", "malformed", "extra", "dg"}
)

// fuzzSlots is how many objects of each kind a sequence names.
const fuzzSlots = 5

// generate returns n random steps. Most edits, deletes and evictions
// aim at an object an earlier step created, a third of them by its
// creator, so that they get past RBAC and NotFound to usher's rules.
func generate(r *rand.Rand, n int) []fuzzStep {
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	made := map[string][]fuzzStep{} // by kind
	steps := make([]fuzzStep, n)
	for i := range steps {
		s := fuzzStep{Op: pick(fuzzOps), Actor: fuzzActors[r.IntN(len(fuzzActors))].name, Kind: pick(fuzzKinds), Slot: r.IntN(fuzzSlots)}
		switch s.Op {
		case "evict", "status", "deletecollection", "bind":
			s.Kind = "pod"
		case "scale":
			s.Kind, s.N = "deploy", r.IntN(4)
		}
		if s.Kind == "pod" && s.Op != "create" && r.IntN(3) == 0 {
			s.Slot = -1 - r.IntN(8) // a pod by its rank: maybe one a controller made
		} else if c := made[s.Kind]; s.Op != "create" && len(c) > 0 && r.IntN(10) < 8 {
			target := c[r.IntN(len(c))]
			s.Slot = target.Slot
			if r.IntN(3) == 0 {
				s.Actor = target.Actor
			}
		}
		switch s.Op {
		case "create":
			s.Ann, s.Queue, s.ACL, s.N, s.Sel = pick(fuzzCreates), pick(fuzzQueues), pick(fuzzACLs), r.IntN(3), r.IntN(fuzzSlots)
			if r.IntN(2) == 0 { // a create usher should admit: a queue the submitter may use
				s.Actor = pick([]string{Alice, Alice, Bob, Carol, "dave", "erin", Ext, "op"})
				s.Ann, s.Queue = "", map[string]string{Alice: pick([]string{"", "root.dev"}), Bob: pick([]string{"", "root.ops"}),
					Carol: "root.dev", "dave": "root.dev", "erin": "root.ops", Ext: "root.dev", "op": "root.dev"}[s.Actor]
				if s.Actor == Ext || s.Actor == "op" {
					s.Ann = Alice
				}
			}
			if s.Kind == "job" && s.N == 0 {
				s.N = 1
			}
			made[s.Kind] = append(made[s.Kind], s)
		case "delete":
			s.N = r.IntN(3)
		case "evict", "scale", "deletecollection":
		default:
			switch r.IntN(5) {
			case 0:
				s.Ann = pick(fuzzEdits)
			case 1:
				s.Queue = pick(append(fuzzQueues[3:], "-"))
			case 2:
				s.ACL = pick(append(fuzzACLs[3:], "-"))
			case 3:
				s.Owner = pick([]string{"x", "p", "d", "r", "j"})
				if s.Owner != "x" {
					s.Owner += strconv.Itoa(r.IntN(fuzzSlots))
				}
			}
		}
		steps[i] = s
	}
	return steps
}

// fuzzActor is one requester, with the identity the API server gives it.
type fuzzActor struct {
	client kubernetes.Interface
	user   string
	groups []string
}

// fuzzer holds usher, the actors and usher's own decision engine for the
// same configuration.
type fuzzer struct {
	t      *testing.T
	e      *usherEnv
	admin  kubernetes.Interface
	actors map[string]*fuzzActor
	gen    *engine.Generation
	hwm    int64
	// ops counts the requests sent, refused those refused.
	ops, refused int
	// verbose (USHER_FUZZ_VERBOSE=1) logs every step and its answer.
	verbose bool
}

// fuzzViolation is a broken invariant; Kind names which (the shrinker
// keeps a sequence only while it breaks the same one).
type fuzzViolation struct{ Kind, Msg string }

func (v *fuzzViolation) Error() string { return v.Kind + ": " + v.Msg }

func newFuzzer(t *testing.T, ctx context.Context) (*fuzzer, string) {
	e, ns := setupKill(t, ctx, fuzzConfig, "fuzz")
	cfg, err := config.Parse("fuzz.yaml", []byte(fuzzConfig))
	if err != nil {
		t.Fatal(err)
	}
	gen, err := engine.New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fuzzer{t: t, e: e, admin: e.admin, gen: gen, actors: map[string]*fuzzActor{}, verbose: os.Getenv("USHER_FUZZ_VERBOSE") == "1"}
	for _, a := range fuzzActors {
		cfg, err := cluster.RESTConfig(map[bool]string{true: Admin, false: a.name}[a.impersonate != ""])
		if err != nil {
			t.Fatal(err)
		}
		cfg.Impersonate = rest.ImpersonationConfig{UserName: a.impersonate, Groups: a.groups}
		cfg.WarningHandler = rest.NoWarnings{} // usher's queue warnings, thousands of them
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ssr, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("who is %s: %v", a.name, err)
		}
		f.actors[a.name] = &fuzzActor{client: c, user: ssr.Status.UserInfo.Username, groups: ssr.Status.UserInfo.Groups}
	}
	return f, ns
}

// namespace makes a fresh namespace covered by usher, where every actor
// may manage workloads, evict pods and write their status.
func (f *fuzzer) namespace(ctx context.Context) string {
	ns := f.e.namespace(ctx, "fuzz")
	grantSubresources(ctx, f.t, f.admin, ns)
	for _, role := range []rbacv1.RoleRef{
		{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: TenantRole},
		{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "usher-e2e-subresources"},
	} {
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "fuzz-" + strings.ToLower(role.Kind), Namespace: ns}, RoleRef: role}
		for _, a := range fuzzActors {
			if a.impersonate != "" {
				rb.Subjects = append(rb.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: a.impersonate})
			}
		}
		if _, err := f.admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
	return ns
}

// fuzzObj is what the fuzzer knows of one object (by UID): the user.info
// and directory-groups annotations it first had, the request that made
// it (none: a controller) and how it looked when last read.
type fuzzObj struct {
	kind, name string
	stamp, dg  string
	stamped    bool
	info       fuzzIdentity
	creator    string
	top, tmpl  metav1.ObjectMeta
}

type fuzzIdentity struct {
	User   string
	Groups []string
}

func (a fuzzIdentity) equal(b fuzzIdentity) bool {
	return a.User == b.User && slices.Equal(a.Groups, b.Groups)
}

// run is one sequence in one namespace.
type run struct {
	*fuzzer
	ns      string
	target  string // the name of the object the current step acts on
	seen    map[types.UID]*fuzzObj
	deleted map[types.UID]string
}

// replay runs steps in a fresh namespace, checking the invariants after
// every step and for a few seconds after the last (so that what the
// controllers do about it is seen), and returns the first violation.
func (f *fuzzer) replay(ctx context.Context, steps []fuzzStep) *fuzzViolation {
	ns := f.namespace(ctx)
	defer f.admin.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), ns, metav1.DeleteOptions{})
	r := &run{fuzzer: f, ns: ns, seen: map[types.UID]*fuzzObj{}, deleted: map[types.UID]string{}}
	for _, s := range steps {
		if ctx.Err() != nil {
			return nil
		}
		if v := r.step(ctx, s); v != nil {
			return v
		}
		if v := r.check(ctx); v != nil {
			return v
		}
	}
	settle := time.Now().Add(3 * time.Second)
	for time.Now().Before(settle) && ctx.Err() == nil {
		if v := r.check(ctx); v != nil {
			return v
		}
		select {
		case <-time.After(300 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return nil
}

// annotation returns the user.info (and directory-groups) value of
// variant for actor a: self (a's own identity), alice or bob (theirs,
// forged unless a is trusted), case and fold (a's own user plus a member
// encoding/json reads as the user, naming admin), malformed, extra (an
// unknown member), empty (no user), dg (alice with a directory group).
func (r *run) annotation(variant string, a *fuzzActor) (info, dg string) {
	switch variant {
	case "self":
		return UserInfoJSON(a.user, a.groups...), ""
	case Alice, Bob:
		o := r.actors[variant]
		return UserInfoJSON(o.user, o.groups...), ""
	case "case":
		return fmt.Sprintf(`{"user":%q,"groups":[],"User":"admin"}`, a.user), ""
	case "fold":
		return fmt.Sprintf(`{"user":%q,"groups":[],"uſer":"admin"}`, a.user), ""
	case "malformed":
		return `{"user":"alice","groups":[`, ""
	case "extra":
		return `{"user":"alice","groups":[],"queue":"root.ops"}`, ""
	case "empty":
		return `{"user":"","groups":[]}`, ""
	case "dg":
		return UserInfoJSON(Alice, "dev", "system:authenticated", "ml"), `["ml"]`
	}
	return "", ""
}

// meta returns the metadata a create or edit of s sets: the pod's own, or
// the pod template's.
func (r *run) setMeta(s fuzzStep, a *fuzzActor, m *metav1.ObjectMeta, creating bool) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	switch {
	case s.Ann == "remove":
		delete(m.Annotations, UserInfoAnnotation)
	case s.Ann != "":
		info, dg := r.annotation(s.Ann, a)
		m.Annotations[UserInfoAnnotation] = info
		if dg != "" {
			m.Annotations[directoryGroup] = dg
		}
	}
	switch s.Queue {
	case "":
	case "-":
		delete(m.Labels, queueLabel)
	default:
		m.Labels[queueLabel] = s.Queue
	}
	switch s.ACL {
	case "":
	case "-":
		delete(m.Annotations, modifyACL)
	default:
		m.Annotations[modifyACL] = s.ACL
	}
	if !creating && s.Ann == "" && s.Queue == "" && s.ACL == "" && s.Owner == "" {
		m.Labels["touched"] = strconv.Itoa(r.ops)
	}
}

// ownerRefs returns the ownerReferences of an edit naming owner: the
// object of that name, or (x, or none of that name) one that does not
// exist.
func (r *run) ownerRefs(ctx context.Context, owner string) []metav1.OwnerReference {
	ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "00000000-0000-0000-0000-000000000000"}
	if owner != "x" {
		if o, err := r.get(ctx, r.admin, owner[:1], owner); err == nil {
			ref = metav1.OwnerReference{APIVersion: o.apiVersion, Kind: o.kindName, Name: owner, UID: o.top.UID}
		}
	}
	return []metav1.OwnerReference{ref}
}

// snap is an object as read: its metadata and its pod template's.
type snap struct {
	kind, apiVersion, kindName string
	top, tmpl                  metav1.ObjectMeta
}

func podSnap(p *corev1.Pod) snap {
	return snap{"pod", "v1", "Pod", p.ObjectMeta, p.ObjectMeta}
}
func deploySnap(d *appsv1.Deployment) snap {
	return snap{"deploy", "apps/v1", "Deployment", d.ObjectMeta, d.Spec.Template.ObjectMeta}
}
func rsSnap(d *appsv1.ReplicaSet) snap {
	return snap{"rs", "apps/v1", "ReplicaSet", d.ObjectMeta, d.Spec.Template.ObjectMeta}
}
func jobSnap(d *batchv1.Job) snap {
	return snap{"job", "batch/v1", "Job", d.ObjectMeta, d.Spec.Template.ObjectMeta}
}

var kindLetter = map[string]string{"p": "pod", "d": "deploy", "r": "rs", "j": "job"}

func (r *run) get(ctx context.Context, c kubernetes.Interface, kind, name string) (snap, error) {
	if k, ok := kindLetter[kind]; ok {
		kind = k
	}
	opts := metav1.GetOptions{}
	switch kind {
	case "pod":
		o, err := c.CoreV1().Pods(r.ns).Get(ctx, name, opts)
		if err != nil {
			return snap{}, err
		}
		return podSnap(o), nil
	case "deploy":
		o, err := c.AppsV1().Deployments(r.ns).Get(ctx, name, opts)
		if err != nil {
			return snap{}, err
		}
		return deploySnap(o), nil
	case "rs":
		o, err := c.AppsV1().ReplicaSets(r.ns).Get(ctx, name, opts)
		if err != nil {
			return snap{}, err
		}
		return rsSnap(o), nil
	default:
		o, err := c.BatchV1().Jobs(r.ns).Get(ctx, name, opts)
		if err != nil {
			return snap{}, err
		}
		return jobSnap(o), nil
	}
}

func selector(sel int) map[string]string { return map[string]string{"app": "a" + strconv.Itoa(sel)} }

// create builds and creates the object of s as actor a.
func (r *run) create(ctx context.Context, s fuzzStep, a *fuzzActor) (snap, error) {
	tmpl := metav1.ObjectMeta{Labels: selector(s.Sel)}
	r.setMeta(s, a, &tmpl, true)
	top := metav1.ObjectMeta{Name: s.name(), Namespace: r.ns}
	spec := PodSpec()
	n := int32(s.N)
	opts := metav1.CreateOptions{}
	switch s.Kind {
	case "pod":
		tmpl.Name, tmpl.Namespace = top.Name, top.Namespace
		o, err := a.client.CoreV1().Pods(r.ns).Create(ctx, &corev1.Pod{ObjectMeta: tmpl, Spec: spec}, opts)
		if err != nil {
			return snap{}, err
		}
		return podSnap(o), nil
	case "deploy":
		o, err := a.client.AppsV1().Deployments(r.ns).Create(ctx, &appsv1.Deployment{ObjectMeta: top, Spec: appsv1.DeploymentSpec{
			Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: selector(s.Sel)},
			Template: corev1.PodTemplateSpec{ObjectMeta: tmpl, Spec: spec}}}, opts)
		if err != nil {
			return snap{}, err
		}
		return deploySnap(o), nil
	case "rs":
		o, err := a.client.AppsV1().ReplicaSets(r.ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: top, Spec: appsv1.ReplicaSetSpec{
			Replicas: &n, Selector: &metav1.LabelSelector{MatchLabels: selector(s.Sel)},
			Template: corev1.PodTemplateSpec{ObjectMeta: tmpl, Spec: spec}}}, opts)
		if err != nil {
			return snap{}, err
		}
		return rsSnap(o), nil
	default:
		spec.RestartPolicy = corev1.RestartPolicyNever
		o, err := a.client.BatchV1().Jobs(r.ns).Create(ctx, &batchv1.Job{ObjectMeta: top, Spec: batchv1.JobSpec{
			Parallelism: &n, Completions: &n, Template: corev1.PodTemplateSpec{ObjectMeta: tmpl, Spec: spec}}}, opts)
		if err != nil {
			return snap{}, err
		}
		return jobSnap(o), nil
	}
}

// update reads the object as admin, edits it as s says and writes it back
// as a (status: through pods/status).
func (r *run) update(ctx context.Context, s fuzzStep, a *fuzzActor) (snap, error) {
	var out snap
	var err error
	opts := metav1.UpdateOptions{}
	edit := func(top, tmpl *metav1.ObjectMeta) {
		r.setMeta(s, a, tmpl, false)
		if s.Owner != "" {
			top.OwnerReferences = r.ownerRefs(ctx, s.Owner)
		}
	}
	switch s.Kind {
	case "pod":
		var o *corev1.Pod
		if o, err = r.admin.CoreV1().Pods(r.ns).Get(ctx, r.target, metav1.GetOptions{}); err != nil {
			return out, err
		}
		edit(&o.ObjectMeta, &o.ObjectMeta)
		if s.Op == "status" {
			o, err = a.client.CoreV1().Pods(r.ns).UpdateStatus(ctx, o, opts)
		} else {
			o, err = a.client.CoreV1().Pods(r.ns).Update(ctx, o, opts)
		}
		if err == nil {
			out = podSnap(o)
		}
	case "deploy":
		var o *appsv1.Deployment
		if o, err = r.admin.AppsV1().Deployments(r.ns).Get(ctx, r.target, metav1.GetOptions{}); err != nil {
			return out, err
		}
		edit(&o.ObjectMeta, &o.Spec.Template.ObjectMeta)
		if o, err = a.client.AppsV1().Deployments(r.ns).Update(ctx, o, opts); err == nil {
			out = deploySnap(o)
		}
	case "rs":
		var o *appsv1.ReplicaSet
		if o, err = r.admin.AppsV1().ReplicaSets(r.ns).Get(ctx, r.target, metav1.GetOptions{}); err != nil {
			return out, err
		}
		edit(&o.ObjectMeta, &o.Spec.Template.ObjectMeta)
		if o, err = a.client.AppsV1().ReplicaSets(r.ns).Update(ctx, o, opts); err == nil {
			out = rsSnap(o)
		}
	default:
		var o *batchv1.Job
		if o, err = r.admin.BatchV1().Jobs(r.ns).Get(ctx, r.target, metav1.GetOptions{}); err != nil {
			return out, err
		}
		edit(&o.ObjectMeta, &o.Spec.Template.ObjectMeta)
		if o, err = a.client.BatchV1().Jobs(r.ns).Update(ctx, o, opts); err == nil {
			out = jobSnap(o)
		}
	}
	return out, err
}

// patch sends the edit of s as a JSON patch, a merge patch, a strategic
// merge patch or a server-side apply (forced, field manager of the actor).
func (r *run) patch(ctx context.Context, s fuzzStep, a *fuzzActor) (snap, error) {
	var m metav1.ObjectMeta
	r.setMeta(s, a, &m, false)
	removed := func(key string, kv map[string]string) any {
		if v, ok := kv[key]; ok {
			return v
		}
		return nil
	}
	annotations, labels := map[string]any{}, map[string]any{}
	if s.Ann != "" {
		annotations[UserInfoAnnotation] = removed(UserInfoAnnotation, m.Annotations)
		if v, ok := m.Annotations[directoryGroup]; ok {
			annotations[directoryGroup] = v
		}
	}
	if s.ACL != "" {
		annotations[modifyACL] = removed(modifyACL, m.Annotations)
	}
	if s.Queue != "" {
		labels[queueLabel] = removed(queueLabel, m.Labels)
	}
	if v, ok := m.Labels["touched"]; ok {
		labels["touched"] = v
	}
	var owners []metav1.OwnerReference
	if s.Owner != "" {
		owners = r.ownerRefs(ctx, s.Owner)
	}
	prefix := "/spec/template/metadata"
	if s.Kind == "pod" {
		prefix = "/metadata"
	}
	var pt types.PatchType
	var body any
	opts := metav1.PatchOptions{}
	switch s.Op {
	case "patch-json":
		pt = types.JSONPatchType
		ops := []map[string]any{}
		esc := func(k string) string { return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1") }
		for where, kv := range map[string]map[string]any{"annotations": annotations, "labels": labels} {
			for k, v := range kv {
				if v == nil {
					ops = append(ops, map[string]any{"op": "remove", "path": prefix + "/" + where + "/" + esc(k)})
				} else {
					ops = append(ops, map[string]any{"op": "add", "path": prefix + "/" + where + "/" + esc(k), "value": v})
				}
			}
		}
		if owners != nil {
			ops = append(ops, map[string]any{"op": "add", "path": "/metadata/ownerReferences", "value": owners})
		}
		body = ops
	default:
		meta := map[string]any{}
		if len(annotations) > 0 {
			meta["annotations"] = annotations
		}
		if len(labels) > 0 {
			meta["labels"] = labels
		}
		top := map[string]any{}
		if owners != nil {
			top["ownerReferences"] = owners
		}
		obj := map[string]any{"metadata": top}
		if s.Kind == "pod" {
			for k, v := range meta {
				top[k] = v
			}
		} else {
			obj["spec"] = map[string]any{"template": map[string]any{"metadata": meta}}
		}
		switch s.Op {
		case "patch-merge":
			pt = types.MergePatchType
		case "patch-strategic":
			pt = types.StrategicMergePatchType
		default:
			pt = types.ApplyPatchType
			opts.FieldManager, opts.Force = "fuzz-"+strings.ToLower(s.Actor), ptr(true)
			sn := map[string][2]string{"pod": {"v1", "Pod"}, "deploy": {"apps/v1", "Deployment"}, "rs": {"apps/v1", "ReplicaSet"}, "job": {"batch/v1", "Job"}}[s.Kind]
			obj["apiVersion"], obj["kind"] = sn[0], sn[1]
			top["name"] = r.target
		}
		body = obj
	}
	data, err := json.Marshal(body)
	if err != nil {
		return snap{}, err
	}
	switch s.Kind {
	case "pod":
		o, err := a.client.CoreV1().Pods(r.ns).Patch(ctx, r.target, pt, data, opts)
		if err != nil {
			return snap{}, err
		}
		return podSnap(o), nil
	case "deploy":
		o, err := a.client.AppsV1().Deployments(r.ns).Patch(ctx, r.target, pt, data, opts)
		if err != nil {
			return snap{}, err
		}
		return deploySnap(o), nil
	case "rs":
		o, err := a.client.AppsV1().ReplicaSets(r.ns).Patch(ctx, r.target, pt, data, opts)
		if err != nil {
			return snap{}, err
		}
		return rsSnap(o), nil
	default:
		o, err := a.client.BatchV1().Jobs(r.ns).Patch(ctx, r.target, pt, data, opts)
		if err != nil {
			return snap{}, err
		}
		return jobSnap(o), nil
	}
}

func (r *run) delete(ctx context.Context, s fuzzStep, a *fuzzActor) error {
	prop := []metav1.DeletionPropagation{metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground}[s.N%3]
	opts := metav1.DeleteOptions{PropagationPolicy: &prop, GracePeriodSeconds: ptr[int64](0)}
	switch s.Kind {
	case "pod":
		return a.client.CoreV1().Pods(r.ns).Delete(ctx, r.target, opts)
	case "deploy":
		return a.client.AppsV1().Deployments(r.ns).Delete(ctx, r.target, opts)
	case "rs":
		return a.client.AppsV1().ReplicaSets(r.ns).Delete(ctx, r.target, opts)
	default:
		return a.client.BatchV1().Jobs(r.ns).Delete(ctx, r.target, opts)
	}
}

// nthPod names the n-th pod of the namespace in name order (modulo
// their number), so that steps reach the pods controllers make.
func (r *run) nthPod(ctx context.Context, n int) string {
	ps, err := r.admin.CoreV1().Pods(r.ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(ps.Items) == 0 {
		return "none"
	}
	names := make([]string, len(ps.Items))
	for i, p := range ps.Items {
		names[i] = p.Name
	}
	slices.Sort(names)
	return names[n%len(names)]
}

// unanswered reports whether err says a review was not answered: the API
// server could not call usher (timeout, connection, a 5xx from usher) or
// failed itself.
func unanswered(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	if strings.Contains(msg, "failed calling webhook") || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) {
		return true
	}
	var st apierrors.APIStatus
	return errors.As(err, &st) && st.Status().Code >= 500 && !strings.Contains(msg, "denied the request")
}

// step runs one request and checks what its answer alone shows.
func (r *run) step(ctx context.Context, s fuzzStep) *fuzzViolation {
	a := r.actors[s.Actor]
	r.ops++
	r.target = s.name()
	if s.Slot < 0 {
		r.target = r.nthPod(ctx, -s.Slot-1)
	}
	var before snap
	var beforeErr error
	if s.Op != "create" {
		kind := s.Kind
		before, beforeErr = r.get(ctx, r.admin, kind, r.target)
	}
	var after snap
	var err error
	switch s.Op {
	case "create":
		after, err = r.create(ctx, s, a)
	case "update", "status":
		after, err = r.update(ctx, s, a)
	case "patch-json", "patch-merge", "patch-strategic", "apply":
		after, err = r.patch(ctx, s, a)
	case "delete":
		err = r.delete(ctx, s, a)
	case "deletecollection":
		// What a may kill is let go; anything else of the namespace's
		// bare pods that disappears is a finding ("vanished").
		if all, lerr := r.list(ctx); lerr == nil {
			for _, sn := range all {
				if ok, _ := r.mayKill(ctx, a, sn); ok && sn.kind == "pod" {
					r.deleted[sn.top.UID] = s.Actor
				}
			}
		}
		err = a.client.CoreV1().Pods(r.ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)}, metav1.ListOptions{})
	case "bind":
		// A Binding's annotations and labels are copied onto the pod.
		var m metav1.ObjectMeta
		r.setMeta(s, a, &m, false)
		m.Name = r.target
		err = a.client.CoreV1().Pods(r.ns).Bind(ctx, &corev1.Binding{ObjectMeta: m,
			Target: corev1.ObjectReference{Kind: "Node", Name: "fuzz-node"}}, metav1.CreateOptions{})
		if err == nil {
			after, _ = r.get(ctx, r.admin, "pod", r.target)
		}
	case "evict":
		err = a.client.CoreV1().Pods(r.ns).EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: r.target, Namespace: r.ns},
			DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: ptr[int64](0)}})
	case "scale":
		_, err = a.client.AppsV1().Deployments(r.ns).Patch(ctx, r.target, types.MergePatchType,
			fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, s.N), metav1.PatchOptions{}, "scale")
	}
	if unanswered(err) {
		return &fuzzViolation{"unanswered", fmt.Sprintf("%v: %v", s, err)}
	}
	if r.verbose {
		r.t.Logf("fuzz: %s %v: %v", r.ns, s, err)
	}
	if err != nil {
		r.refused++
		return nil
	}
	switch s.Op {
	case "create":
		o := r.record(after, s.Actor)
		if want := r.createdAs(s, a); !slices.ContainsFunc(want, o.info.equal) && !(s.Kind == "rs" && !o.stamped && systemUser(a.user)) {
			return &fuzzViolation{"stamp", fmt.Sprintf("%v stored user.info %q, want one of %+v", s, o.stamp, want)}
		}
	case "delete", "evict":
		if beforeErr == nil {
			if ok, why := r.mayKill(ctx, a, before); !ok {
				return &fuzzViolation{"kill", fmt.Sprintf("%v succeeded on %s/%s of %s: %s", s, before.kind, before.top.Name, before.tmpl.Annotations[UserInfoAnnotation], why)}
			}
			r.deleted[before.top.UID] = s.Actor
		}
	case "scale":
	default:
		if o := r.seen[after.top.UID]; o != nil { // the garbage collector may act before the next check
			o.top, o.tmpl = after.top, after.tmpl
		}
		changed := (s.Owner != "" && !ownersEqual(before.top.OwnerReferences, after.top.OwnerReferences)) ||
			(s.ACL != "" && before.tmpl.Annotations[modifyACL] != after.tmpl.Annotations[modifyACL]) ||
			(s.Queue != "" && before.tmpl.Labels[queueLabel] != after.tmpl.Labels[queueLabel])
		if changed && beforeErr == nil {
			if ok, why := r.mayKill(ctx, a, before); !ok {
				return &fuzzViolation{"guarded-edit", fmt.Sprintf("%v changed what decides deletion of %s/%s: %s", s, before.kind, before.top.Name, why)}
			}
		}
	}
	return nil
}

func ownersEqual(a, b []metav1.OwnerReference) bool {
	return slices.EqualFunc(a, b, func(x, y metav1.OwnerReference) bool { return x.UID == y.UID && x.Kind == y.Kind })
}

// createdAs returns the identities a create of s by a may store: a's
// own, and, when a is a trusted setter, the one its annotation names
// (less the groups its directory-groups annotation lists, which usher
// decides again).
func (r *run) createdAs(s fuzzStep, a *fuzzActor) []fuzzIdentity {
	want := []fuzzIdentity{{a.user, a.groups}}
	if !trustedSetter(a.user) {
		return want
	}
	info, dg := r.annotation(s.Ann, a)
	if id, ok := parseStamp(info); ok {
		want = append(want, id)
		if dg != "" {
			var drop []string
			_ = json.Unmarshal([]byte(dg), &drop)
			id.Groups = slices.DeleteFunc(slices.Clone(id.Groups), func(g string) bool { return slices.Contains(drop, g) })
			want = append(want, id)
		}
	}
	return want
}

func systemUser(u string) bool {
	return strings.HasPrefix(u, "system:serviceaccount:kube-system:") || u == "system:kube-controller-manager"
}

func trustedSetter(u string) bool { return u == Ext || systemUser(u) }

// parseStamp reads user.info as YuniKorn does (encoding/json).
func parseStamp(v string) (fuzzIdentity, bool) {
	info, ok, err := UserInfo(map[string]string{UserInfoAnnotation: v})
	if !ok || err != nil || info.User == "" {
		return fuzzIdentity{}, false
	}
	groups := info.Groups
	if groups == nil {
		groups = []string{}
	}
	return fuzzIdentity{info.User, groups}, true
}

// record remembers the object first seen as sn, made by creator ("" for
// a controller).
func (r *run) record(sn snap, creator string) *fuzzObj {
	o := &fuzzObj{kind: sn.kind, name: sn.top.Name, creator: creator, top: sn.top, tmpl: sn.tmpl}
	o.stamp, o.stamped = sn.tmpl.Annotations[UserInfoAnnotation]
	o.dg = sn.tmpl.Annotations[directoryGroup]
	o.info, _ = parseStamp(o.stamp)
	r.seen[sn.top.UID] = o
	return o
}

// queues returns the queue paths that decide who administers the object:
// its queue label, or the default queue; root for a queue the
// configuration does not have.
func (r *run) queues(sn snap) []string {
	q, ok := sn.tmpl.Labels[queueLabel]
	if !ok {
		return []string{"root.default"}
	}
	return []string{q}
}

// mayKill is the kill rule of docs/delete.md, decided with usher's
// engine on the object as it was: trusted deleters, its owner, its modify
// ACL, admins of its queue (root when the queue does not exist) and
// cluster admins; anyone once it is being deleted.
func (r *run) mayKill(ctx context.Context, a *fuzzActor, sn snap) (bool, string) {
	if trustedSetter(a.user) || slices.Contains(a.groups, "system:masters") || sn.top.DeletionTimestamp != nil {
		return true, ""
	}
	owner, ok := parseStamp(sn.tmpl.Annotations[UserInfoAnnotation])
	if ok && owner.User == a.user {
		return true, ""
	}
	if v, ok := sn.tmpl.Annotations[modifyACL]; ok {
		users, groups, _ := strings.Cut(v, " ")
		groups, _, _ = strings.Cut(groups, " ")
		if users == "*" || slices.Contains(strings.Split(users, ","), a.user) ||
			slices.ContainsFunc(strings.Split(groups, ","), func(g string) bool { return g != "" && slices.Contains(a.groups, g) }) {
			return true, ""
		}
	}
	for _, q := range r.queues(sn) {
		res, err := r.gen.Check(ctx, engine.Request{Queue: q, User: a.user, Groups: a.groups, Decided: true, Action: policy.Admin})
		if err != nil {
			res, err = r.gen.Check(ctx, engine.Request{Queue: "root", User: a.user, Groups: a.groups, Decided: true, Action: policy.Admin})
		}
		if err == nil && res.Allowed {
			return true, ""
		}
	}
	return false, fmt.Sprintf("%s %v is not the owner %q, in the modify ACL or an admin of %v", a.user, a.groups, owner.User, r.queues(sn))
}

// list reads every governed object of the namespace, owners first.
func (r *run) list(ctx context.Context) ([]snap, error) {
	var out []snap
	opts := metav1.ListOptions{}
	ds, err := r.admin.AppsV1().Deployments(r.ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for i := range ds.Items {
		out = append(out, deploySnap(&ds.Items[i]))
	}
	js, err := r.admin.BatchV1().Jobs(r.ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for i := range js.Items {
		out = append(out, jobSnap(&js.Items[i]))
	}
	rs, err := r.admin.AppsV1().ReplicaSets(r.ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for i := range rs.Items {
		out = append(out, rsSnap(&rs.Items[i]))
	}
	ps, err := r.admin.CoreV1().Pods(r.ns).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	for i := range ps.Items {
		out = append(out, podSnap(&ps.Items[i]))
	}
	return out, nil
}

// check reads the namespace back and checks the invariants.
func (r *run) check(ctx context.Context) *fuzzViolation {
	if v := r.memory(); v != nil {
		return v
	}
	all, err := r.list(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return &fuzzViolation{"unanswered", fmt.Sprintf("listing %s: %v", r.ns, err)}
	}
	present := map[types.UID]bool{}
	for _, sn := range all {
		present[sn.top.UID] = true
		what := fmt.Sprintf("%s %s/%s", sn.kind, r.ns, sn.top.Name)
		stamp, stamped := sn.tmpl.Annotations[UserInfoAnnotation]
		o, known := r.seen[sn.top.UID]
		if known {
			if stamp != o.stamp || stamped != o.stamped || sn.tmpl.Annotations[directoryGroup] != o.dg {
				return &fuzzViolation{"identity-changed", fmt.Sprintf("%s: user.info %q (directory groups %q), first seen %q (%q)", what, stamp, sn.tmpl.Annotations[directoryGroup], o.stamp, o.dg)}
			}
		} else {
			ctrl := metav1.GetControllerOfNoCopy(&sn.top)
			if ctrl == nil {
				o = r.record(sn, "?")
			} else if owner, ok := r.seen[ctrl.UID]; ok {
				o = r.record(sn, "")
				if owner.stamped && !o.info.equal(owner.info) {
					return &fuzzViolation{"controller-stamp", fmt.Sprintf("%s made by %s %s has user.info %q, its template %q", what, owner.kind, owner.name, o.stamp, owner.stamp)}
				}
				if !owner.stamped && (!stamped || !systemUser(o.info.User)) {
					return &fuzzViolation{"controller-stamp", fmt.Sprintf("%s made by unstamped %s %s has user.info %q, want its controller's", what, owner.kind, owner.name, o.stamp)}
				}
			} else {
				continue // its owner is not known yet
			}
		}
		if _, ok := parseStamp(stamp); !ok && !(sn.kind == "rs" && o.creator != "" && o.creator != "?" && systemUser(r.actors[o.creator].user)) {
			return &fuzzViolation{"unstamped", fmt.Sprintf("%s has user.info %q", what, stamp)}
		}
		o.top, o.tmpl = sn.top, sn.tmpl
		if v := r.reowned(ctx, sn, o); v != nil {
			return v
		}
		if sn.kind == "pod" && stamped {
			id, _ := parseStamp(stamp)
			res, err := r.gen.Place(ctx, engine.PlaceRequest{Queue: sn.tmpl.Labels[queueLabel], Namespace: r.ns, User: id.User, Groups: id.Groups, Decided: true})
			if err != nil || !res.Placed {
				return &fuzzViolation{"queue", fmt.Sprintf("%s of %s labelled queue=%q: %v %s", what, stamp, sn.tmpl.Labels[queueLabel], err, res.Reason())}
			}
		}
	}
	for uid, o := range r.seen {
		if present[uid] || o.creator == "gone" {
			continue
		}
		if _, ok := r.deleted[uid]; !ok && len(o.top.OwnerReferences) == 0 && o.top.DeletionTimestamp == nil && !r.adoptable(ctx, o) {
			return &fuzzViolation{"vanished", fmt.Sprintf("%s %s/%s of %q is gone, and nobody who may was let delete it", o.kind, r.ns, o.name, o.stamp)}
		}
		o.creator = "gone"
	}
	return nil
}

// adoptable reports whether a workload that may kill o selects it: its
// controller may have adopted and deleted it between two checks.
func (r *run) adoptable(ctx context.Context, o *fuzzObj) bool {
	for _, w := range r.seen {
		if (w.kind == "rs" || w.kind == "deploy") && w.stamped && w.tmpl.Labels["app"] == o.tmpl.Labels["app"] {
			if ok, _ := r.mayKill(ctx, &fuzzActor{user: w.info.User, groups: w.info.Groups}, snap{kind: o.kind, top: o.top, tmpl: o.tmpl}); ok {
				return true
			}
		}
	}
	return false
}

// reowned checks that the controller of sn, if another user's, may kill
// it: adoption is killing by proxy (docs/delete.md, Adoption).
func (r *run) reowned(ctx context.Context, sn snap, o *fuzzObj) *fuzzViolation {
	ctrl := metav1.GetControllerOfNoCopy(&sn.top)
	if ctrl == nil || !o.stamped {
		return nil
	}
	owner, ok := r.seen[ctrl.UID]
	if !ok || owner.info.User == o.info.User {
		return nil
	}
	if !owner.stamped {
		if systemUser(o.info.User) {
			return nil
		}
		return &fuzzViolation{"re-owned", fmt.Sprintf("%s %s/%s of %q is controlled by %s %s, which has no user.info", sn.kind, r.ns, sn.top.Name, o.stamp, owner.kind, owner.name)}
	}
	if ok, why := r.mayKill(ctx, &fuzzActor{user: owner.info.User, groups: owner.info.Groups}, snap{kind: sn.kind, top: metav1.ObjectMeta{Name: sn.top.Name}, tmpl: sn.tmpl}); !ok {
		return &fuzzViolation{"re-owned", fmt.Sprintf("%s %s/%s of %q is controlled by %s %s of %q: %s", sn.kind, r.ns, sn.top.Name, o.stamp, owner.kind, owner.name, owner.stamp, why)}
	}
	return nil
}

// memory reads usher's peak resident size (VmHWM).
func (f *fuzzer) memory() *fuzzViolation {
	f.e.u.mu.Lock()
	cmd := f.e.u.cmd
	f.e.u.mu.Unlock()
	if cmd == nil {
		return &fuzzViolation{"unanswered", "usher is not running"}
	}
	hwm, err := procStatusBytes(cmd.Process.Pid, "VmHWM")
	if err != nil {
		return &fuzzViolation{"unanswered", fmt.Sprintf("usher (pid %d): %v", cmd.Process.Pid, err)}
	}
	f.hwm = max(f.hwm, hwm)
	if f.hwm > fuzzMemoryCeiling {
		return &fuzzViolation{"memory", fmt.Sprintf("usher's VmHWM is %d MiB, over %d MiB", f.hwm>>20, fuzzMemoryCeiling>>20)}
	}
	return nil
}

// shrink drops steps from a failing sequence while a replay (on a fresh
// namespace) still breaks the same invariant: delta debugging, chunks
// halving down to single steps, within budget.
func (f *fuzzer) shrink(ctx context.Context, steps []fuzzStep, kind string, budget time.Duration) []fuzzStep {
	deadline := time.Now().Add(budget)
	fails := func(s []fuzzStep) bool {
		for try := 0; try < 2; try++ { // controllers are not deterministic: a second chance
			if v := f.replay(ctx, s); v != nil && v.Kind == kind {
				return true
			}
		}
		return false
	}
	for n := 2; len(steps) > 1 && time.Now().Before(deadline); {
		chunk := (len(steps) + n - 1) / n
		reduced := false
		for i := 0; i < len(steps) && time.Now().Before(deadline); i += chunk {
			cand := slices.Concat(steps[:i], steps[min(i+chunk, len(steps)):])
			if len(cand) > 0 && fails(cand) {
				steps, n, reduced = cand, max(n-1, 2), true
				break
			}
		}
		if !reduced {
			if chunk == 1 {
				break
			}
			n = min(n*2, len(steps))
		}
	}
	return steps
}

// webhookFailures counts the lines of the API server's log after offset
// from that say it failed calling a webhook of label's usher.
func webhookFailures(path string, from int64, label string) (n int, first string) {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < from {
		return 0, ""
	}
	for _, line := range strings.Split(string(data[from:]), "\n") {
		if strings.Contains(line, "Failed calling webhook") && strings.Contains(line, label) {
			if n++; n == 1 {
				first = line
			}
		}
	}
	return n, first
}

// regression renders steps as an entry of fuzzRegressions.
func regression(name string, steps []fuzzStep) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\t{name: %q, steps: []fuzzStep{\n", name)
	for _, s := range steps {
		fmt.Fprintf(&b, "\t\t%v,\n", s)
	}
	b.WriteString("\t}},\n")
	return b.String()
}

// TestFuzz runs random sequences of requests by random actors against
// usher on the real control plane, each in a fresh namespace, and checks
// the invariants of docs/security.md (The fuzzer) after every step. The
// seed is printed; USHER_FUZZ_SEED replays it, USHER_FUZZ_DURATION sets
// how long it runs (default 90s). A failing sequence is shrunk and
// printed as an entry for fuzz_regress_test.go (once per invariant), and
// the run goes on.
func TestFuzz(t *testing.T) {
	t.Parallel()
	d := 90 * time.Second
	if v := os.Getenv("USHER_FUZZ_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatalf("USHER_FUZZ_DURATION=%q: %v", v, err)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("USHER_FUZZ_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("USHER_FUZZ_SEED=%q: %v", v, err)
		}
	}
	t.Logf("fuzz: seed %d (USHER_FUZZ_SEED=%d replays it), duration %v", seed, seed, d)
	ctx := ctxFor(t, d+20*time.Minute)
	f, _ := newFuzzer(t, ctx)
	apiLog := filepath.Join(cluster.StateDir, "logs", "kube-apiserver.log")
	var logFrom int64
	if fi, err := os.Stat(apiLog); err == nil {
		logFrom = fi.Size()
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	start, report := time.Now(), time.Now()
	sequences, ops, refused, findings := 0, 0, 0, map[string]bool{}
	for time.Since(start) < d {
		steps := generate(rng, 20+rng.IntN(21))
		sequences++
		runCtx, cancel := context.WithDeadline(ctx, start.Add(d))
		f.ops, f.refused = 0, 0
		v := f.replay(runCtx, steps)
		cancel()
		ops, refused = ops+f.ops, refused+f.refused
		if time.Since(report) > 5*time.Minute {
			t.Logf("fuzz: %v: %d sequences, %d operations, %d findings", time.Since(start).Round(time.Second), sequences, ops, len(findings))
			report = time.Now()
		}
		if v == nil {
			continue
		}
		t.Errorf("fuzz: seed %d, sequence %d: %v", seed, sequences, v)
		if findings[v.Kind] {
			continue // shrunk once already
		}
		findings[v.Kind] = true
		small := f.shrink(ctx, steps, v.Kind, 5*time.Minute)
		t.Errorf("fuzz: shrunk to %d of %d steps; add to fuzzRegressions in fuzz_regress_test.go:\n%s",
			len(small), len(steps), regression(fmt.Sprintf("seed %d sequence %d: %s", seed, sequences, v.Kind), small))
	}
	// Every review answered, the controllers' too: the API server logs
	// each call to usher that failed (timeout, connection, 5xx).
	if n, first := webhookFailures(apiLog, logFrom, f.e.label); n > 0 {
		findings["unanswered (API server log)"] = true
		t.Errorf("fuzz: the API server failed calling usher %d times while fuzzing, first: %s", n, first)
	}
	t.Logf("fuzz: seed %d: %d sequences, %d operations (%d refused or not found) in %v, %d findings, usher's VmHWM %d MiB",
		seed, sequences, ops, refused, time.Since(start).Round(time.Second), len(findings), f.hwm>>20)
}
