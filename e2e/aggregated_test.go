//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// aggregatedServiceName is the Service the APIService names: the
// aggregation layer checks usher's certificate against it, so every
// e2e serving certificate carries it.
const aggregatedServiceName = "usher.usher-aggregated.svc"

// aggregatedManifests registers usher at port as the aggregated API
// access.usher.io/v1alpha1, as the chart does with aggregatedAPI.enabled
// (an ExternalName Service to localhost stands in for usher's Service:
// the e2e usher runs beside the API server, and no proxy routes cluster
// IPs here), and lets every authenticated user create accessreviews.
func aggregatedManifests(port string, caBundle []byte) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: usher-aggregated}
---
apiVersion: v1
kind: Service
metadata: {name: usher, namespace: usher-aggregated}
spec:
  type: ExternalName
  externalName: localhost
  ports: [{port: %[1]s}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.access.usher.io}
spec:
  group: access.usher.io
  version: v1alpha1
  service: {namespace: usher-aggregated, name: usher, port: %[1]s}
  caBundle: %[2]s
  groupPriorityMinimum: 1000
  versionPriority: 15
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: usher-e2e-accessreviews}
rules: [{apiGroups: [access.usher.io], resources: [accessreviews], verbs: [create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: usher-e2e-accessreviews}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: usher-e2e-accessreviews}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: Group, name: "system:authenticated"}]
`, port, base64.StdEncoding.EncodeToString(caBundle))
}

// TestKubectlUsherThroughTheAPIServer: with usher serve --aggregated-api
// and its APIService, kubectl usher works from a tenant's kubeconfig with
// no flag and no variable, the tenant's token going to the API server
// only; usher authorizes the caller the API server names (bob may not ask
// about alice); and a request that reaches usher directly with the
// front proxy's headers but not its certificate is refused.
func TestKubectlUsherThroughTheAPIServer(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 4*time.Minute)
	if _, err := BuildPlugin(); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := cluster.Kubeconfig(Admin)
	if err != nil {
		t.Fatal(err)
	}
	e := startUsherWith(t, ctx, "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n        queues: [{name: dev}]\n", "--kubeconfig", kubeconfig, "--access-auth", "kubernetes", "--aggregated-api")
	_, port, _ := net.SplitHostPort(e.u.Addr)
	manifests := []byte(aggregatedManifests(port, e.u.Cert.CABundle))
	if _, stderr, err := cluster.RunKubectl(ctx, Admin, manifests, "apply", "-f", "-"); err != nil {
		t.Fatalf("kubectl apply: %v: %s", err, stderr)
	}
	// Before usher stops: an APIService nobody answers fails discovery
	// (and namespace deletion) cluster-wide.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, stderr, err := cluster.RunKubectl(ctx, Admin, manifests, "delete", "--wait=false", "-f", "-"); err != nil {
			t.Errorf("kubectl delete: %v: %s", err, stderr)
		}
	})
	if _, stderr, err := cluster.RunKubectl(ctx, Admin, nil, "wait", "--for", "condition=Available", "--timeout", "90s",
		"apiservice/v1alpha1.access.usher.io"); err != nil {
		out, _, _ := cluster.RunKubectl(ctx, Admin, nil, "get", "apiservice/v1alpha1.access.usher.io", "-o", "yaml")
		t.Fatalf("the APIService never became available: %v: %s\n%s", err, stderr, out)
	}

	run := func(user string, args ...string) (string, int) {
		t.Helper()
		out, errOut, code, err := cluster.RunPlugin(ctx, user, nil, nil, args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: kubectl usher %s -> exit %d\n%s%s", user, strings.Join(args, " "), code, out, errOut)
		return out + errOut, code
	}
	if out, code := run(Alice, "whoami"); code != 0 || !strings.Contains(out, "user:    alice") || !strings.Contains(out, "dev, system:authenticated") {
		t.Errorf("alice's whoami through the API server: exit %d\n%s", code, out)
	}
	if out, code := run(Alice, "can-i", "submit", "root.dev"); code != 0 || !strings.Contains(out, "yes") {
		t.Errorf("alice's can-i: exit %d\n%s", code, out)
	}
	if out, code := run(Bob, "can-i", "submit", "root.dev", "--as", Alice, "--as-group", "dev"); code != 2 || !strings.Contains(out, "403") {
		t.Errorf("bob asking about alice: exit %d, want 2 with usher's 403\n%s", code, out)
	}

	// The front proxy's headers without its certificate name nobody.
	body := `{"user":"alice","queue":"root","action":"submit"}`
	for _, path := range []string{"/apis/access.usher.io/v1alpha1/accessreviews", "/v1/access"} {
		u := e.u
		req, code, err := u.DoHeaders(ctx, "POST", path, map[string]string{"X-Remote-User": "admin", "X-Remote-Group": "system:masters",
			"Content-Type": "application/json"}, body)
		if err != nil {
			t.Fatal(err)
		}
		if code != 401 {
			t.Errorf("POST %s with forged X-Remote-* headers: %d %s, want 401", path, code, req)
		}
	}
}
