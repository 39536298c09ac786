package server_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/server"
)

// killYAML has cluster admins (the partition adminacl), application admins,
// queue admins at two levels, and the kill rule switched on.
const killYAML = `partitions:
  - name: default
    adminacl: yarnadmin
    defaultqueue: root.shared
    applicationacls:
      admin: sparkadmin
    queues:
      - name: root
        adminacl: rootadmin
        queues:
          - name: team-a
            submitacl: " dev"
            adminacl: dave
          - name: shared
            adminacl: " shared-admins"
admissionController:
  enforceDeleteACLs: true
`

// deleteReview is a DELETE AdmissionReview as kube-apiserver sends it:
// object null, oldObject the pod being deleted.
func deleteReview(uid, user string, groups []string, labels, annotations map[string]string) string {
	old := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "team-a", "labels": labels, "annotations": annotations},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "busybox"}}},
	}
	review := map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid":       uid,
			"kind":      map[string]string{"group": "", "version": "v1", "kind": "Pod"},
			"resource":  map[string]string{"group": "", "version": "v1", "resource": "pods"},
			"name":      "p",
			"namespace": "team-a",
			"operation": "DELETE",
			"userInfo":  map[string]any{"username": user, "groups": groups},
			"object":    nil,
			"oldObject": old,
			"options":   map[string]any{"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1", "propagationPolicy": "Background"},
		},
	}
	b, err := json.Marshal(review)
	if err != nil {
		panic(err)
	}
	return string(b)
}

type reviewResponse struct {
	Response struct {
		UID     string
		Allowed bool
		Status  *struct {
			Code    int
			Message string
		}
	}
}

func (h *harness) validate(body string) reviewResponse {
	h.t.Helper()
	code, out := h.post("/validate", "application/json", body)
	var rr reviewResponse
	if code != 200 || json.Unmarshal([]byte(out), &rr) != nil {
		h.t.Fatalf("/validate: %d %s", code, out)
	}
	return rr
}

// TestDeleteKillRule proves the wiring of the kill rule through /validate
// with a real configuration: the engine, the application decisions and
// the partition's admins decide who may delete.
func TestDeleteKillRule(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "usher.yaml")
	writeFile(t, cfg, killYAML)
	h := start(t, server.Options{ConfigPath: cfg}, nil)

	aliceInfo := `{"user":"alice","groups":["dev","system:authenticated"]}`
	owned := func(extra ...string) map[string]string {
		a := map[string]string{"yunikorn.apache.org/user.info": aliceInfo}
		for i := 0; i+1 < len(extra); i += 2 {
			a[extra[i]] = extra[i+1]
		}
		return a
	}
	inTeamA := map[string]string{"queue": "root.team-a"}
	auth := []string{"system:authenticated"}
	tests := []struct {
		name   string
		user   string
		groups []string
		labels map[string]string
		ann    map[string]string
		allow  bool
		reason string
	}{
		{"owner", "alice", []string{"dev"}, inTeamA, owned(), true, ""},
		{"stranger", "bob", auth, inTeamA, owned(), false,
			`usher: user "bob" may not delete Pod "team-a/p": bob may not kill the application of alice in root.team-a: ` +
				`not the owner, not an admin of root.team-a or its parents, not a cluster or application admin, not in its modify ACL`},
		{"submitter of the queue is not enough", "carol", []string{"dev"}, inTeamA, owned(), false, "carol may not kill"},
		{"modify ACL user", "carol", auth, inTeamA, owned("usher.io/modify-acl", "carol"), true, ""},
		{"modify ACL group", "oscar", []string{"ops"}, inTeamA, owned("usher.io/modify-acl", "nobody ops"), true, ""},
		{"empty modify ACL", "carol", auth, inTeamA, owned("usher.io/modify-acl", ""), false, "carol may not kill"},
		{"invalid modify ACL", "carol", auth, inTeamA, owned("usher.io/modify-acl", "ca*rol"), false, `its modify ACL "ca*rol" grants nothing`},
		{"queue admin", "dave", auth, inTeamA, owned(), true, ""},
		{"parent queue admin", "rootadmin", auth, inTeamA, owned(), true, ""},
		{"cluster admin", "yarnadmin", auth, inTeamA, owned(), true, ""},
		{"application admin", "sparkadmin", auth, inTeamA, owned(), true, ""},
		{"default queue admin", "sam", []string{"shared-admins"}, nil, owned(), true, ""},
		{"admin of another queue", "dave", auth, nil, owned(), false, "dave may not kill the application of alice in root.shared"},
		{"garbage collector", "system:serviceaccount:kube-system:generic-garbage-collector", []string{"system:serviceaccounts"}, inTeamA, owned(), true, ""},
		{"shared controller-manager user", "system:kube-controller-manager", auth, inTeamA, owned(), true, ""},
		{"no owner: its owner-to-be", "alice", []string{"dev"}, inTeamA, nil, false, "so it has no recorded owner"},
		{"no owner: queue admin", "dave", auth, inTeamA, nil, true, ""},
		{"unknown queue: owner", "alice", []string{"dev"}, map[string]string{"queue": "root.gone"}, owned(), true, ""},
		{"unknown queue: root admin", "rootadmin", auth, map[string]string{"queue": "root.gone"}, owned(), true, ""},
		{"unknown queue: other admin", "dave", auth, map[string]string{"queue": "root.gone"}, owned(), false,
			`queue "root.gone" is not in partition "default", so only admins of root count as its queue admins`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uid := fmt.Sprintf("uid-%d", i)
			rr := h.validate(deleteReview(uid, tt.user, tt.groups, tt.labels, tt.ann))
			if rr.Response.UID != uid || rr.Response.Allowed != tt.allow {
				t.Fatalf("response %+v %+v", rr.Response, rr.Response.Status)
			}
			if !tt.allow && (rr.Response.Status.Code != 403 || !strings.Contains(rr.Response.Status.Message, tt.reason)) {
				t.Fatalf("status %+v, want 403 containing %q", rr.Response.Status, tt.reason)
			}
		})
	}
	if _, m := h.get("/metrics"); !strings.Contains(m, `usher_admission_reviews_total{kind="Pod",operation="DELETE",outcome="denied"}`) {
		t.Fatalf("DELETE reviews not counted:\n%s", m)
	}
	if logs := h.logs.String(); !strings.Contains(logs, `"operation":"DELETE"`) || !strings.Contains(logs, `"identity":"alice"`) {
		t.Fatalf("no audit record of a DELETE:\n%s", logs)
	}

	// A reload keeps the kill rule wired (Store keeps the delete authorizer).
	writeFile(t, cfg, strings.Replace(killYAML, "adminacl: dave", "adminacl: dave,erin", 1))
	if ok, err := h.srv.Reload(); !ok || err != nil {
		t.Fatalf("reload: %v %v", ok, err)
	}
	if rr := h.validate(deleteReview("after-reload", "erin", auth, inTeamA, owned())); !rr.Response.Allowed {
		t.Fatalf("erin administers root.team-a after the reload: %+v", rr.Response.Status)
	}
	if rr := h.validate(deleteReview("after-reload-2", "bob", auth, inTeamA, owned())); rr.Response.Allowed {
		t.Fatal("bob may still not delete after the reload")
	}
}

// TestDeleteKillRuleOff: without enforceDeleteACLs a DELETE passes.
func TestDeleteKillRuleOff(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "usher.yaml")
	writeFile(t, cfg, strings.Replace(killYAML, "enforceDeleteACLs: true", "enforceDeleteACLs: false", 1))
	h := start(t, server.Options{ConfigPath: cfg}, nil)
	rr := h.validate(deleteReview("off", "bob", []string{"system:authenticated"}, nil,
		map[string]string{"yunikorn.apache.org/user.info": `{"user":"alice"}`}))
	if !rr.Response.Allowed {
		t.Fatalf("denied with enforceDeleteACLs off: %+v", rr.Response.Status)
	}
}

// evictionReview is a CREATE of pods/eviction as kube-apiserver sends it:
// the Eviction as the object, the pod only by name.
func evictionReview(uid, user string, groups []string) string {
	review := map[string]any{
		"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
		"request": map[string]any{
			"uid":         uid,
			"kind":        map[string]string{"group": "policy", "version": "v1", "kind": "Eviction"},
			"resource":    map[string]string{"group": "", "version": "v1", "resource": "pods"},
			"subResource": "eviction",
			"name":        "p",
			"namespace":   "team-a",
			"operation":   "CREATE",
			"userInfo":    map[string]any{"username": user, "groups": groups},
			"object": map[string]any{"kind": "Eviction", "apiVersion": "policy/v1",
				"metadata": map[string]any{"name": "p", "namespace": "team-a"}, "deleteOptions": map[string]any{}},
			"oldObject": nil,
			"options":   map[string]any{"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
		},
	}
	b, err := json.Marshal(review)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestEvictionKillRule proves the wiring of evictions through /validate
// with a real configuration: with the kill rule on, only those who may
// kill every application (cluster admins, application admins, admins of
// root) and trusted controllers evict; a queue admin of one queue, a
// submitter and a stranger do not, even where the partition's default
// modify ACL would let them delete the pod itself.
func TestEvictionKillRule(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "usher.yaml")
	writeFile(t, cfg, strings.Replace(killYAML, "      admin: sparkadmin\n", "      admin: sparkadmin\n      modify: \"*\"\n", 1))
	h := start(t, server.Options{ConfigPath: cfg}, nil)
	auth := []string{"system:authenticated"}
	for i, tc := range []struct {
		user   string
		groups []string
		allow  bool
	}{
		{"yarnadmin", auth, true},
		{"rootadmin", auth, true},
		{"sparkadmin", auth, true},
		{"system:serviceaccount:kube-system:cluster-autoscaler", []string{"system:serviceaccounts"}, true},
		{"kubernetes-admin", []string{"system:masters"}, true},
		{"dave", auth, false},
		{"sam", []string{"shared-admins"}, false},
		{"alice", []string{"dev"}, false},
		{"bob", auth, false},
	} {
		rr := h.validate(evictionReview(fmt.Sprintf("ev-%d", i), tc.user, tc.groups))
		if rr.Response.Allowed != tc.allow {
			t.Errorf("%s: allowed = %v, want %v (%+v)", tc.user, rr.Response.Allowed, tc.allow, rr.Response.Status)
			continue
		}
		if !tc.allow && (rr.Response.Status.Code != 403 || !strings.Contains(rr.Response.Status.Message,
			fmt.Sprintf(`usher: user %q may not evict Pod "team-a/p": `, tc.user))) {
			t.Errorf("%s: status %+v", tc.user, rr.Response.Status)
		}
	}
	// The same stranger may delete the pod itself through the default modify ACL "*".
	if rr := h.validate(deleteReview("del", "bob", auth, nil, map[string]string{"yunikorn.apache.org/user.info": `{"user":"alice"}`})); !rr.Response.Allowed {
		t.Fatalf("bob deleting under the default modify ACL: %+v", rr.Response.Status)
	}
}
