package server_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/hack/authtest"
	"github.com/usherhq/usher/server"
)

// delegatedYAML: carol administers root.teama through the directory's
// group leads only; alice administers root.prod; bob is the partition's
// admin; flux is a trusted setter.
const delegatedYAML = `partitions:
  - name: default
    groups: merge
    adminacl: bob
    usergroupresolver:
      type: test
      users:
        carol: [leads]
        alice: []
        bob: []
    queues:
      - name: root
        queues:
          - name: teama
            adminacl: " leads"
          - name: prod
            adminacl: alice
            properties: {application.sort.policy: fifo}
admissionController:
  delegatedAdministration: %s
  trustedSetters:
    users: [flux]
`

func delegatedConfig(mode string) string { return strings.Replace(delegatedYAML, "%s", mode, 1) }

// reviewAs is an AdmissionReview of operation op on obj (kind Kind of
// the core group) by user with groups.
func reviewAs(t *testing.T, kind, op, user string, groups []string, obj, old any) string {
	t.Helper()
	req := map[string]any{"uid": "u-1", "operation": op, "name": "usher", "namespace": "usher-system",
		"kind":     map[string]string{"group": "", "version": "v1", "kind": kind},
		"resource": map[string]string{"group": "", "version": "v1", "resource": strings.ToLower(kind) + "s"},
		"userInfo": map[string]any{"username": user, "groups": groups}, "object": obj}
	if old != nil {
		req["oldObject"] = old
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
	return string(b)
}

func configMapOf(queues string, keys ...string) map[string]any {
	data := map[string]string{"queues.yaml": queues}
	for i := 0; i+1 < len(keys); i += 2 {
		data[keys[i]] = keys[i+1]
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "usher", "namespace": "usher-system"}, "data": data}
}

// Under delegatedAdministration (the one in service), a write of usher's
// ConfigMap is decided by the writer's admin rights, groups from the
// directory included: each change it may not make is listed with why;
// a change that takes the writer's own admin right is refused; trusted
// setters and system:masters pass; warn admits with the reasons as a
// warning; the log carries the changes.
func TestValidateConfigDelegated(t *testing.T) {
	start2 := func(mode string) *harness {
		cfg := filepath.Join(t.TempDir(), "usher.yaml")
		writeFile(t, cfg, delegatedConfig(mode))
		return start(t, server.Options{ConfigPath: cfg}, nil)
	}
	h := start2("enforce")
	child := strings.Replace(delegatedConfig("enforce"), `adminacl: " leads"`, "adminacl: \" leads\"\n            queues: [{name: new}]", 1)
	prod := strings.Replace(delegatedConfig("enforce"), "fifo", "fair", 1)
	for _, tt := range []struct {
		name, user string
		groups     []string
		queues     string
		want       string // in the denial; "" admits
		keys       []string
	}{
		{"a queue admin (by directory group) adds a child", "carol", nil, child, "", nil},
		{"the queue admin changes a queue it does not administer", "carol", nil, prod,
			`user "carol" may not make these changes (delegatedAdministration, docs/delegated-administration.md):` +
				"\n  changes queue default/root.prod: needs admin on default/root", nil},
		{"the queue's own admin changes it: needs its parent's (stricter than YARN-5949)", "alice", nil, prod, "changes queue default/root.prod: needs admin on default/root", nil},
		{"turning delegation off is decided by the setting in service", "carol", nil, delegatedConfig("off"),
			"changes the admission settings or the ConfigMap's other keys: needs the adminacl of partition default", nil},
		{"the partition admin removes its own admin right", "bob", nil, strings.Replace(delegatedConfig("enforce"), "adminacl: bob", "adminacl: alice", 1),
			"removes your own admin right on default/root", nil},
		{"the partition admin", "bob", nil, prod, "", nil},
		{"a key YuniKorn reads", "carol", nil, delegatedConfig("enforce"), "changes the admission settings or the ConfigMap's other keys: needs the adminacl", []string{"service.schedulingInterval", "1s"}},
		{"a trusted setter", "flux", nil, delegatedConfig("off"), "", nil},
		{"system:masters", "root", []string{"system:masters"}, delegatedConfig("off"), "", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := postConfigReview(t, h, reviewAs(t, "ConfigMap", "UPDATE", tt.user, tt.groups, configMapOf(tt.queues, tt.keys...), nil))
			switch {
			case tt.want == "" && !r.Allowed:
				t.Fatalf("refused: %s", r.Result.Message)
			case tt.want != "" && r.Allowed:
				t.Fatalf("admitted (warnings %q)", r.Warnings)
			case tt.want != "" && (r.Result.Code != 403 || !strings.Contains(r.Result.Message, tt.want)):
				t.Fatalf("denial %d %q lacks %q", r.Result.Code, r.Result.Message, tt.want)
			}
		})
	}
	if logs := h.logs.String(); !strings.Contains(logs, `"msg":"configuration change under delegated administration"`) || !strings.Contains(logs, "changes queue default/root.prod") {
		t.Errorf("no log record of the changes:\n%s", logs)
	}

	// A write that changes nothing asks the directory nothing; one that
	// changes a queue asks it for the writer's groups.
	misses := func(h *harness) string {
		_, body := h.get("/metrics")
		return metricValue(body, `usher_group_cache_misses_total{partition="default"}`)
	}
	n := start2("enforce")
	postConfigReview(t, n, reviewAs(t, "ConfigMap", "UPDATE", "carol", nil, configMapOf(delegatedConfig("enforce")), nil))
	if m := misses(n); m != "0" {
		t.Errorf("a write without changes looked up the writer's groups: %s misses", m)
	}
	postConfigReview(t, n, reviewAs(t, "ConfigMap", "UPDATE", "carol", nil, configMapOf(child), nil))
	if m := misses(n); m != "1" {
		t.Errorf("a write with a change: %s misses, want 1", m)
	}

	w := start2("warn")
	r := postConfigReview(t, w, reviewAs(t, "ConfigMap", "UPDATE", "carol", nil, configMapOf(strings.Replace(prod, "enforce", "warn", 1)), nil))
	if !r.Allowed || len(r.Warnings) != 1 || !strings.HasSuffix(r.Warnings[0], "(delegatedAdministration is not enforced): changes queue default/root.prod: needs admin on default/root (no adminacl of it or its parents names you)") {
		t.Fatalf("warn: allowed %v, warnings %q", r.Allowed, r.Warnings)
	}
}

// Under delegatedAdministration, setting the parent queue annotation of
// a Namespace needs admin on the queue it names, a quota annotation admin
// on the namespace's queue (or its nearest configured ancestor).
func TestNamespaceSteering(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "usher.yaml")
	writeFile(t, cfg, delegatedConfig("enforce"))
	h := start(t, server.Options{ConfigPath: cfg}, nil)
	ns := func(annotations ...string) map[string]any {
		a := map[string]string{}
		for i := 0; i+1 < len(annotations); i += 2 {
			a[annotations[i]] = annotations[i+1]
		}
		return map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ml", "annotations": a}}
	}
	const parent, quota = "yunikorn.apache.org/parentqueue", "yunikorn.apache.org/namespace.quota"
	for _, tt := range []struct {
		name, user string
		obj, old   map[string]any
		want       string
	}{
		{"carol moves a namespace under root.prod", "carol", ns(parent, "root.prod"), ns(), `user "carol" may not set annotation yunikorn.apache.org/parentqueue on namespace "ml"`},
		{"carol creates one under root.prod", "carol", ns(parent, "root.prod"), nil, "carol may not administer root.prod"},
		{"alice, root.prod's admin, may", "alice", ns(parent, "root.prod"), ns(), ""},
		{"carol under her own queue", "carol", ns(parent, "root.teama"), ns(), ""},
		{"carol sets the quota of root.teama.ml (judged at root.teama)", "carol", ns(parent, "root.teama", quota, `{"cpu":"2"}`), ns(parent, "root.teama"), ""},
		{"alice may not", "alice", ns(parent, "root.teama", quota, `{"cpu":"2"}`), ns(parent, "root.teama"), "alice may not administer root.teama"},
		{"removing the parent puts ml under root", "carol", ns(), ns(parent, "root.teama"), "carol may not administer root"},
		{"other annotations are anyone's", "alice", ns(parent, "root.teama", "team", "x"), ns(parent, "root.teama"), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			op := "UPDATE"
			if tt.old == nil {
				op = "CREATE"
			}
			rr := h.validate(reviewAs(t, "Namespace", op, tt.user, nil, tt.obj, tt.old))
			switch r := rr.Response; {
			case tt.want == "" && !r.Allowed:
				t.Fatalf("refused: %+v", r.Status)
			case tt.want != "" && (r.Allowed || r.Status.Code != 403 || !strings.Contains(r.Status.Message, tt.want)):
				t.Fatalf("got %v %+v, want a denial with %q", r.Allowed, r.Status, tt.want)
			}
		})
	}
}

// In warn mode a namespace steered under a queue the writer may not
// administer is admitted, with the reason as a warning.
func TestNamespaceSteeringWarn(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "usher.yaml")
	writeFile(t, cfg, delegatedConfig("warn"))
	h := start(t, server.Options{ConfigPath: cfg}, nil)
	ns := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ml",
		"annotations": map[string]string{"yunikorn.apache.org/parentqueue": "root.prod"}}}
	_, out := h.post("/validate", "application/json", reviewAs(t, "Namespace", "CREATE", "carol", nil, ns, nil))
	var rr struct {
		Response struct {
			Allowed  bool
			Warnings []string
		}
	}
	if json.Unmarshal([]byte(out), &rr) != nil || !rr.Response.Allowed || len(rr.Response.Warnings) != 1 ||
		!strings.Contains(rr.Response.Warnings[0], "carol may not administer root.prod") {
		t.Fatalf("got %s", out)
	}
}

// Enforcing while usher registers its webhooks without a ConfigMap to
// guard (no --guard-config-map) would fail open: usher says so and only
// warns.
func TestDelegatedFailsOpen(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "usher.yaml")
	writeFile(t, cfg, delegatedConfig("enforce"))
	h := start(t, server.Options{ConfigPath: cfg, ManageWebhooks: true, Kubeconfig: authtest.New(t).Kubeconfig(t, dir)}, nil)
	if !strings.Contains(h.logs.String(), "does not register validate-config.usher.io with failurePolicy Fail") {
		t.Errorf("no error logged:\n%s", h.logs.String())
	}
	prod := strings.Replace(delegatedConfig("enforce"), "fifo", "fair", 1)
	r := postConfigReview(t, h, reviewAs(t, "ConfigMap", "UPDATE", "carol", nil, configMapOf(prod), nil))
	if !r.Allowed || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "changes queue default/root.prod") {
		t.Fatalf("allowed %v, warnings %q", r.Allowed, r.Warnings)
	}
}

// Deleting the ConfigMap under delegatedAdministration changes every
// queue (YuniKorn falls back to its defaults): a tenant may not, a
// trusted setter may.
func TestValidateConfigDelegatedDelete(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "usher.yaml")
	writeFile(t, cfg, delegatedConfig("enforce"))
	h := start(t, server.Options{ConfigPath: cfg}, nil)
	old := configMapOf(delegatedConfig("enforce"))
	if r := postConfigReview(t, h, reviewAs(t, "ConfigMap", "DELETE", "carol", nil, nil, old)); r.Allowed {
		t.Fatalf("carol deleted the ConfigMap (warnings %q)", r.Warnings)
	}
	if r := postConfigReview(t, h, reviewAs(t, "ConfigMap", "DELETE", "flux", nil, nil, old)); !r.Allowed {
		t.Fatalf("the trusted setter may not delete: %s", r.Result.Message)
	}
}
