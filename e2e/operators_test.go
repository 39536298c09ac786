//go:build e2e

package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
)

// operatorsConfig governs SparkApplications, RayJobs and RayClusters, and
// trusts their operators, Spark's drivers and YuniKorn's scheduler to copy
// identities from their parents.
const operatorsConfig = baseConfig + operatorsAccess + `  customResources:
    - {group: sparkoperator.k8s.io, version: v1beta2, kind: SparkApplication, resource: sparkapplications, templates: [spec.driver, spec.executor]}
    - {group: ray.io, version: v1, kind: RayJob, resource: rayjobs,
       templates: [spec.rayClusterSpec.headGroupSpec.template.metadata, "spec.rayClusterSpec.workerGroupSpecs.*.template.metadata"]}
    - {group: ray.io, version: v1, kind: RayCluster, resource: rayclusters,
       templates: [spec.headGroupSpec.template.metadata, "spec.workerGroupSpecs.*.template.metadata"]}
`

const operatorsAccess = `    propagators:
      - users: "^system:serviceaccount:[^:]+:spark-operator$"
        parents: [sparkoperator.k8s.io/SparkApplication]
      - users: "^system:serviceaccount:[^:]+:spark$"
        parents: [Pod]
      - users: "^system:serviceaccount:[^:]+:yunikorn-admin$"
        parents: [Pod]
        podParents: any
      - users: "^system:serviceaccount:[^:]+:kuberay-operator$"
        parents: [ray.io/RayJob, ray.io/RayCluster]
`

var (
	sparkApps   = schema.GroupVersionResource{Group: "sparkoperator.k8s.io", Version: "v1beta2", Resource: "sparkapplications"}
	rayJobs     = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayjobs"}
	rayClusters = schema.GroupVersionResource{Group: "ray.io", Version: "v1", Resource: "rayclusters"}
)

// installCRDs applies the custom resource definitions of testdata/crds and
// waits until they are served.
func installCRDs(ctx context.Context, t *testing.T, files ...string) {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"apply", "--server-side"}
	for _, f := range files {
		args = append(args, "-f", filepath.Join(root, "e2e", "testdata", "crds", f))
	}
	if _, stderr, err := cluster.RunKubectl(ctx, Admin, nil, args...); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, stderr)
	}
	if _, stderr, err := cluster.RunKubectl(ctx, Admin, nil, "wait", "--for", "condition=established", "--timeout", "60s",
		"crd/sparkapplications.sparkoperator.k8s.io", "crd/rayjobs.ray.io", "crd/rayclusters.ray.io"); err != nil {
		t.Fatalf("the CRDs are not established: %v: %s", err, stderr)
	}
}

// operatorRole lets the tenants and the operators' service accounts of ns
// use pods and the custom resources.
func operatorRole(ctx context.Context, t *testing.T, admin kubernetes.Interface, ns string, subjects ...rbacv1.Subject) {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "operators", Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "create", "delete"}},
		{APIGroups: []string{"sparkoperator.k8s.io", "ray.io"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
	if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "operators", Namespace: ns}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "operators"}}
	if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// registerCustom points the API server's admission at usher for the
// custom resources too, as usher webhook renders them, and waits until a
// dry run of probe (as alice) comes back stamped.
func (e *usherEnv) registerCustom(ctx context.Context, probe func(context.Context) (map[string]string, error), resources ...schema.GroupVersionResource) {
	t := e.t
	t.Helper()
	var create, both []admissionregistrationv1.RuleWithOperations
	for _, r := range resources {
		rule := admissionregistrationv1.Rule{APIGroups: []string{r.Group}, APIVersions: []string{r.Version}, Resources: []string{r.Resource}}
		create = append(create, admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: rule})
		both = append(both, admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}, Rule: rule})
	}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{usherNSLabel: e.label}}
	unMutate, err := RegisterMutatingWebhook(ctx, e.admin, Webhook{Name: "usher-custom-mutate-" + e.label, URL: e.u.URL() + "/mutate",
		CABundle: e.u.Cert.CABundle, FailurePolicy: admissionregistrationv1.Fail, Rules: create, NamespaceSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	unValidate, err := RegisterValidatingWebhook(ctx, e.admin, Webhook{Name: "usher-custom-validate-" + e.label, URL: e.u.URL() + "/validate",
		CABundle: e.u.Cert.CABundle, FailurePolicy: admissionregistrationv1.Fail, Rules: both, NamespaceSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unregister(t, unMutate); unregister(t, unValidate) })
	var last error
	if err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		var ann map[string]string
		ann, last = probe(ctx)
		return last == nil && ann[UserInfoAnnotation] != "", nil
	}); err != nil {
		t.Fatalf("usher's webhooks for the custom resources never took effect (last dry run: %v): %v", last, err)
	}
}

func serviceAccountUser(ns, name string) string { return "system:serviceaccount:" + ns + ":" + name }

// TestOperatorsPropagate: an identity travels from a custom resource to
// every pod made for it, on the real control plane. alice's
// SparkApplication is stamped alice; the operator's service account may
// give the driver alice's stamp or none (it gets alice's), never bob's,
// and never without an owner; a client with a token bound to alice's
// driver makes executors as alice, not as bob nor for bob's driver;
// YuniKorn's placeholder for the driver gets alice; alice cannot change
// her SparkApplication's stamp; a RayJob's RayCluster and its head pod
// carry alice through KubeRay's operator; a Deployment's pods are stamped
// as before.
func TestOperatorsPropagate(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 4*time.Minute)
	installCRDs(ctx, t, "sparkapplication.yaml", "rayjob.yaml", "raycluster.yaml")
	kubeconfig, err := cluster.Kubeconfig(Admin)
	if err != nil {
		t.Fatal(err)
	}
	e := startUsherWith(t, ctx, operatorsConfig, "--kubeconfig", kubeconfig)
	ns := e.namespace(ctx, "operators")
	e.register(ctx, ns)
	admin := e.admin
	var subjects []rbacv1.Subject
	for _, sa := range []string{"spark-operator", "spark", "yunikorn-admin", "kuberay-operator"} {
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		subjects = append(subjects, rbacv1.Subject{Kind: "ServiceAccount", Name: sa, Namespace: ns})
	}
	for _, u := range []string{Alice, Bob} {
		subjects = append(subjects, rbacv1.Subject{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: u})
	}
	operatorRole(ctx, t, admin, ns, subjects...)

	adminCfg, err := cluster.RESTConfig(Admin)
	if err != nil {
		t.Fatal(err)
	}
	as := func(user string) (dynamic.Interface, kubernetes.Interface) {
		cfg := rest.CopyConfig(adminCfg)
		if user != Admin {
			cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}}
			if !strings.HasPrefix(user, "system:") {
				cfg.Impersonate.Groups = append(UserGroups[user], "system:authenticated")
			}
		}
		return dynamic.NewForConfigOrDie(cfg), kubernetes.NewForConfigOrDie(cfg)
	}
	aliceD, _ := as(Alice)
	bobD, _ := as(Bob)
	_, operator := as(serviceAccountUser(ns, "spark-operator"))
	_, yunikorn := as(serviceAccountUser(ns, "yunikorn-admin"))
	kuberayD, kuberay := as(serviceAccountUser(ns, "kuberay-operator"))
	aliceInfo, bobInfo := UserInfoJSON(Alice, aliceGroups...), UserInfoJSON(Bob, "ops", "system:authenticated")

	newSparkApp := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec": map[string]any{"type": "Scala", "mode": "cluster", "sparkVersion": "4.0.0", "mainApplicationFile": "local:///opt/spark/examples.jar",
				"driver": map[string]any{"cores": 1}, "executor": map[string]any{"instances": 2}}}}
	}
	e.registerCustom(ctx, func(ctx context.Context) (map[string]string, error) {
		got, err := aliceD.Resource(sparkApps).Namespace(ns).Create(ctx, newSparkApp("probe"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return nil, err
		}
		return got.GetAnnotations(), nil
	}, sparkApps, rayJobs, rayClusters)
	sparkApp := func(c dynamic.Interface, name string) *unstructured.Unstructured {
		got, err := c.Resource(sparkApps).Namespace(ns).Create(ctx, newSparkApp(name), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating SparkApplication %s: %v", name, err)
		}
		return got
	}
	app, bobApp := sparkApp(aliceD, "etl"), sparkApp(bobD, "bob-etl")
	wantIdentity(t, "alice's SparkApplication", app.GetAnnotations(), Alice, aliceGroups...)
	driverAnn, _, _ := unstructured.NestedStringMap(app.Object, "spec", "driver", "annotations")
	if driverAnn[UserInfoAnnotation] != app.GetAnnotations()[UserInfoAnnotation] {
		t.Errorf("spec.driver.annotations carry %v, want the object's stamp", driverAnn)
	}

	ownedBy := func(obj metav1.Object, apiVersion, kind string, controller bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: obj.GetName(), UID: obj.GetUID(), Controller: &controller}}
	}
	pod := func(name, sa string, ann map[string]string, owners []metav1.OwnerReference) *corev1.Pod {
		p := Pod(ns, name, ann)
		p.OwnerReferences, p.Spec.ServiceAccountName = owners, sa
		return p
	}
	sparkOwner := func(a *unstructured.Unstructured) []metav1.OwnerReference {
		return ownedBy(a, "sparkoperator.k8s.io/v1beta2", "SparkApplication", true)
	}

	// The operator makes the drivers.
	driver, err := operator.CoreV1().Pods(ns).Create(ctx, pod("etl-driver", "spark", map[string]string{UserInfoAnnotation: aliceInfo}, sparkOwner(app)), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the operator copying alice's stamp onto her driver: %v", err)
	}
	if p, err := operator.CoreV1().Pods(ns).Create(ctx, pod("etl-driver-2", "spark", nil, sparkOwner(app)), metav1.CreateOptions{}); err != nil {
		t.Errorf("the operator's unstamped driver: %v", err)
	} else {
		wantIdentity(t, "the operator's unstamped driver", p.Annotations, Alice, aliceGroups...)
	}
	_, err = operator.CoreV1().Pods(ns).Create(ctx, pod("forged-driver", "spark", map[string]string{UserInfoAnnotation: bobInfo}, sparkOwner(app)), metav1.CreateOptions{})
	wantDenied(t, "the operator writing bob's stamp on alice's driver", err, "may only copy the identity of its parent", `SparkApplication "`+ns+`/etl"`)
	_, err = operator.CoreV1().Pods(ns).Create(ctx, pod("orphan", "spark", nil, nil), metav1.CreateOptions{})
	wantDenied(t, "the operator's pod without an owner", err, "names no parent")
	bobDriver, err := operator.CoreV1().Pods(ns).Create(ctx, pod("bob-driver", "spark", nil, sparkOwner(bobApp)), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantIdentity(t, "bob's driver", bobDriver.Annotations, Bob)

	// What the tenant's kubectl prints for a denial.
	forged := pod("forged-driver", "spark", map[string]string{UserInfoAnnotation: bobInfo}, sparkOwner(app))
	forged.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	manifest, _ := yaml.Marshal(forged)
	_, stderr, err := cluster.RunKubectl(ctx, Admin, manifest, "create", "-f", "-", "--as", serviceAccountUser(ns, "spark-operator"))
	if err == nil || !strings.Contains(stderr, "may only copy the identity of its parent") {
		t.Errorf("kubectl create as the operator: err %v, stderr %q", err, stderr)
	}
	t.Logf("kubectl prints:\n%s", stderr)

	// The driver makes its executors with the token bound to it.
	tokenOf := func(p *corev1.Pod) kubernetes.Interface {
		tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "spark", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.Name, UID: p.UID}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cfg := rest.AnonymousClientConfig(adminCfg)
		cfg.BearerToken = tr.Status.Token
		return kubernetes.NewForConfigOrDie(cfg)
	}
	fromDriver := tokenOf(driver)
	driverOwner := ownedBy(driver, "v1", "Pod", true)
	if p, err := fromDriver.CoreV1().Pods(ns).Create(ctx, pod("etl-exec-1", "spark", nil, driverOwner), metav1.CreateOptions{}); err != nil {
		t.Errorf("alice's driver making its executor: %v", err)
	} else {
		wantIdentity(t, "alice's executor", p.Annotations, Alice, aliceGroups...)
	}
	_, err = fromDriver.CoreV1().Pods(ns).Create(ctx, pod("etl-exec-2", "spark", map[string]string{UserInfoAnnotation: bobInfo}, driverOwner), metav1.CreateOptions{})
	wantDenied(t, "alice's driver making an executor as bob", err, "may only copy the identity of its parent")
	_, err = fromDriver.CoreV1().Pods(ns).Create(ctx, pod("bob-exec-1", "spark", nil, ownedBy(bobDriver, "v1", "Pod", true)), metav1.CreateOptions{})
	wantDenied(t, "alice's driver making bob's driver's executor", err, "copies only from the pod its token is bound to")

	// YuniKorn's placeholder for the driver's gang.
	ph, err := yunikorn.CoreV1().Pods(ns).Create(ctx, pod("tg-etl-0", "", map[string]string{"internal.yunikorn.apache.org/placeholder": "true"},
		ownedBy(driver, "v1", "Pod", false)), metav1.CreateOptions{})
	if err != nil {
		t.Errorf("YuniKorn's placeholder: %v", err)
	} else {
		wantIdentity(t, "YuniKorn's placeholder", ph.Annotations, Alice, aliceGroups...)
	}

	// alice cannot change her SparkApplication's stamp.
	app.SetAnnotations(map[string]string{UserInfoAnnotation: bobInfo})
	_, err = aliceD.Resource(sparkApps).Namespace(ns).Update(ctx, app, metav1.UpdateOptions{})
	wantDenied(t, "alice changing her SparkApplication's stamp", err, "may not")

	// KubeRay: RayJob → RayCluster → head pod.
	template := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "ray-head", "image": Image}}}}
	rayJob := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": map[string]any{"name": "train", "namespace": ns},
		"spec": map[string]any{"entrypoint": "python train.py", "rayClusterSpec": map[string]any{"headGroupSpec": map[string]any{"template": template}}}}}
	job, err := aliceD.Resource(rayJobs).Namespace(ns).Create(ctx, rayJob, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	headAnn, _, _ := unstructured.NestedStringMap(job.Object, "spec", "rayClusterSpec", "headGroupSpec", "template", "metadata", "annotations")
	wantIdentity(t, "the RayJob's head template", headAnn, Alice, aliceGroups...)
	rc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": map[string]any{"name": "train-raycluster", "namespace": ns},
		"spec": map[string]any{"headGroupSpec": map[string]any{"template": template}}}}
	rc.SetOwnerReferences(ownedBy(job, "ray.io/v1", "RayJob", true))
	cl, err := kuberayD.Resource(rayClusters).Namespace(ns).Create(ctx, rc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("KubeRay's RayCluster for alice's RayJob: %v", err)
	}
	wantIdentity(t, "the RayCluster", cl.GetAnnotations(), Alice, aliceGroups...)
	if head, err := kuberay.CoreV1().Pods(ns).Create(ctx, pod("train-head", "", nil, ownedBy(cl, "ray.io/v1", "RayCluster", true)), metav1.CreateOptions{}); err != nil {
		t.Errorf("KubeRay's head pod: %v", err)
	} else {
		wantIdentity(t, "the head pod", head.Annotations, Alice, aliceGroups...)
	}
	// A Deployment's pods are stamped as they always were.
	if _, err := client(t, Alice).AppsV1().Deployments(ns).Create(ctx, Deployment(ns, "web", 1, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range waitPods(ctx, t, admin, ns, "app=web", 1, 90*time.Second) {
		wantIdentity(t, "the Deployment's pod", p.Annotations, Alice, aliceGroups...)
	}
	// A name alone never counts: a RayCluster naming alice's RayJob with another uid.
	yes := true
	rc2 := rc.DeepCopy()
	rc2.SetName("stolen")
	rc2.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayJob", Name: job.GetName(), UID: types.UID("00000000-0000-0000-0000-000000000000"), Controller: &yes}})
	_, err = kuberayD.Resource(rayClusters).Namespace(ns).Create(ctx, rc2, metav1.CreateOptions{})
	wantDenied(t, "a RayCluster naming the RayJob with another uid", err, "but that object's uid is")
}
