//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// shippedClusterRoles returns the ClusterRoles of deploy/rbac.yaml by name.
func shippedClusterRoles(t *testing.T) map[string]rbacv1.ClusterRole {
	t.Helper()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "deploy", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]rbacv1.ClusterRole{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		var r rbacv1.ClusterRole
		if err := json.Unmarshal(raw, &r); err != nil {
			t.Fatal(err)
		}
		if r.Kind == "ClusterRole" {
			out[r.Name] = r
		}
	}
	return out
}

// usherServiceAccount creates a service account in ns bound to
// system:auth-delegator (as deploy/rbac.yaml binds usher's), and writes a
// kubeconfig with a token of it into dir.
func usherServiceAccount(t *testing.T, ctx context.Context, e *usherEnv, ns, dir string) string {
	t.Helper()
	if _, err := e.admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "usher"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := "usher-e2e-auth-delegator-" + e.label
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:auth-delegator"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "usher", Namespace: ns}},
	}
	if _, err := e.admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	tr, err := e.admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "usher", &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr(int64(3600))},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "usher.kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: %q, certificate-authority: %q}
users:
- name: usher
  user: {token: %q}
contexts:
- name: usher
  context: {cluster: e2e, user: usher}
current-context: usher
`, cluster.Server, cluster.CAFile, tr.Status.Token)
	if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// bindShipped binds the ClusterRole deploy/rbac.yaml ships as role (created
// under a name of this test's) to user.
func bindShipped(t *testing.T, ctx context.Context, e *usherEnv, roles map[string]rbacv1.ClusterRole, role, user string) {
	t.Helper()
	shipped, ok := roles[role]
	if !ok {
		t.Fatalf("deploy/rbac.yaml has no ClusterRole %s", role)
	}
	name := role + "-" + e.label
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: shipped.Rules}
	if _, err := e.admin.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := e.admin.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		e.admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

func tokenOf(t *testing.T, user string) string {
	t.Helper()
	cfg, err := cluster.RESTConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken == "" {
		t.Fatalf("no token in the kubeconfig of %s", user)
	}
	return cfg.BearerToken
}

// TestUsherAccessAuth: /v1/access and /metrics check their callers against
// the real API server, with usher's own credentials being a service account
// bound to system:auth-delegator only, and the callers' permissions the
// ClusterRoles deploy/rbac.yaml ships.
func TestUsherAccessAuth(t *testing.T) {
	t.Parallel()
	ctx := ctxFor(t, 3*time.Minute)
	roles := shippedClusterRoles(t)
	// usher is started after its service account exists; the env is made
	// first for its label and admin client.
	e := &usherEnv{t: t, label: fmt.Sprintf("a%d-%d", time.Now().UnixNano()%1e9, usherSeq.Add(1)), admin: client(t, Admin)}
	ns := e.namespace(ctx, "access")
	kubeconfig := usherServiceAccount(t, ctx, e, ns, t.TempDir())
	bindShipped(t, ctx, e, roles, "usher-access-reviewer", Carol)
	bindShipped(t, ctx, e, roles, "usher-metrics-reader", Bob)
	label := e.label
	e = startUsherWith(t, ctx, baseConfig, "--access-auth", "kubernetes", "--kubeconfig", kubeconfig, "--access-auth-cache-ttl", "1s")
	e.label = label
	u := e.u

	ask := func(token, body string) (int, string) {
		t.Helper()
		b, code, err := u.Do(ctx, "POST", "/v1/access", token, body)
		if err != nil {
			t.Fatal(err)
		}
		return code, b
	}
	alice, bob, carol := tokenOf(t, Alice), tokenOf(t, Bob), tokenOf(t, Carol)

	t.Run("anonymous is refused", func(t *testing.T) {
		code, body := ask("", `{"queue":"root","user":"alice"}`)
		if code != 401 || strings.Contains(body, "allowed") {
			t.Fatalf("%d %s, want 401", code, body)
		}
		if code, body := ask("not-a-token", `{"queue":"root","user":"alice"}`); code != 401 {
			t.Fatalf("an invalid token: %d %s, want 401", code, body)
		}
	})
	t.Run("alice asks about herself", func(t *testing.T) {
		code, body := ask(alice, `{"queue":"root","user":"alice","groups":["dev","system:authenticated"]}`)
		if code != 200 || !strings.Contains(body, `"allowed":true`) {
			t.Fatalf("%d %s, want 200 allowed", code, body)
		}
	})
	t.Run("alice may not ask about bob", func(t *testing.T) {
		for _, q := range []string{`{"queue":"root","user":"bob"}`, `{"queue":"root","user":"alice","groups":["ops"]}`} {
			if code, body := ask(alice, q); code != 403 || !strings.Contains(body, "accessreviews") {
				t.Fatalf("%s: %d %s, want 403", q, code, body)
			}
		}
	})
	t.Run("carol, bound to usher-access-reviewer, may ask about bob", func(t *testing.T) {
		var code int
		var body string
		err := Eventually(ctx, 60*time.Second, func(context.Context) (bool, error) {
			code, body = ask(carol, `{"queue":"root","user":"bob","groups":["ops"]}`)
			return code == 200, nil
		})
		if err != nil || !strings.Contains(body, `"allowed":true`) || !strings.Contains(body, `"user":"bob"`) {
			t.Fatalf("%d %s: %v", code, body, err)
		}
	})
	t.Run("/metrics needs get on the non-resource URL", func(t *testing.T) {
		if b, code, err := u.Do(ctx, "GET", "/metrics", "", ""); err != nil || code != 401 {
			t.Fatalf("anonymous: %d %.200s %v", code, b, err)
		}
		if b, code, err := u.Do(ctx, "GET", "/metrics", alice, ""); err != nil || code != 403 {
			t.Fatalf("alice: %d %.200s %v", code, b, err)
		}
		var b string
		var code int
		err := Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
			var err error
			b, code, err = u.Do(ctx, "GET", "/metrics", bob, "")
			return code == 200, err
		})
		if err != nil || !strings.Contains(b, `usher_access_auth_total{endpoint="access",result="forbidden"}`) {
			t.Fatalf("bob, bound to usher-metrics-reader: %d %.300s %v", code, b, err)
		}
	})
	t.Run("the webhooks keep working", func(t *testing.T) {
		e.register(ctx, ns)
		p, err := client(t, Alice).CoreV1().Pods(ns).Create(ctx, Pod(ns, "alice-pod", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantIdentity(t, "alice's pod", p.Annotations, Alice, "dev")
	})
}
