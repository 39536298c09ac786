package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/serving"
)

// The names of the generated worlds: users, groups (none with ":" or ".",
// which YuniKorn's ACL parser drops, and none named like a user, which
// YuniKorn's none resolver gives a user whose stamp holds no groups;
// docs/yunikorn.md lists both), queues, namespaces and queue markers.
var (
	propUsers      = []string{"alice", "bob", "carol", "dave"}
	propGroups     = []string{"dev", "ml", "ops", "sre", "data"}
	propNamespaces = []string{"a", "b", "teams", "ml"}
	propMarkers    = []string{"", "", "root.a", "root.a.x", "root.b", "root.c", "root.teams.a", "a", "b", "a.x", "zzz", "root.zzz", "root"}
)

// propWorld is one generated configuration.
type propWorld struct {
	mode      string              // resolve or merge
	directory map[string][]string // the test resolver's table
	acls      map[string][2]string
	rules     []string
}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func someOf(r *rand.Rand, xs []string) []string {
	var out []string
	for _, x := range xs {
		if r.IntN(3) == 0 {
			out = append(out, x)
		}
	}
	return out
}

// randomACL is "*", users, " groups" or "users groups", or "" for none.
func randomACL(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return ""
	case 1:
		return "*"
	}
	users, groups := strings.Join(someOf(r, propUsers), ","), strings.Join(someOf(r, propGroups), ",")
	if groups == "" {
		if users == "" {
			return " "
		}
		return users
	}
	return users + " " + groups
}

func randomFilter(r *rand.Rand) string {
	if r.IntN(3) != 0 {
		return ""
	}
	gs := someOf(r, propGroups)
	if len(gs) == 0 {
		gs = []string{pick(r, propGroups)}
	}
	return fmt.Sprintf("\n        filter: {type: %s, groups: [%s]}", pick(r, []string{"allow", "deny"}), strings.Join(gs, ", "))
}

func newWorld(r *rand.Rand) *propWorld {
	w := &propWorld{mode: pick(r, []string{"resolve", "merge"}), directory: map[string][]string{}, acls: map[string][2]string{}}
	for _, u := range propUsers {
		w.directory[u] = someOf(r, propGroups)
	}
	for _, q := range []string{"root", "a", "x", "b", "c", "teams"} {
		w.acls[q] = [2]string{randomACL(r), randomACL(r)}
	}
	for range r.IntN(4) {
		create := r.IntN(2) == 0
		var rule string
		switch r.IntN(4) {
		case 0:
			rule = fmt.Sprintf("name: provided\n        create: %v", create)
		case 1:
			rule = fmt.Sprintf("name: tag\n        value: namespace\n        create: %v\n        parent: {name: fixed, value: root.teams}", create)
		case 2:
			rule = fmt.Sprintf("name: user\n        create: %v\n        parent: {name: fixed, value: %s}", create, pick(r, []string{"root.teams", "root.a"}))
		default:
			rule = "name: fixed\n        value: " + pick(r, []string{"root.b", "root.a.x", "root.c", "c"})
		}
		w.rules = append(w.rules, rule+randomFilter(r))
	}
	return w
}

// yaml renders the world as usher serves it (groups from the directory,
// as its mode says) or, with yunikorn, as YuniKorn is given it: the same
// queues and rules, groups used as given and the none resolver.
func (w *propWorld) yaml(yunikorn bool) string {
	var b strings.Builder
	b.WriteString("partitions:\n  - name: default\n")
	if !yunikorn {
		fmt.Fprintf(&b, "    groups: %s\n    usergroupresolver:\n      type: test\n      users:\n", w.mode)
		for _, u := range propUsers {
			fmt.Fprintf(&b, "        %s: [%s]\n", u, strings.Join(w.directory[u], ", "))
		}
	}
	if len(w.rules) > 0 {
		b.WriteString("    placementrules:\n")
		for _, rule := range w.rules {
			fmt.Fprintf(&b, "      - %s\n", rule)
		}
	}
	acl := func(indent, q string) {
		for i, key := range []string{"submitacl", "adminacl"} {
			if a := w.acls[q][i]; a != "" {
				fmt.Fprintf(&b, "%s%s: %q\n", indent, key, a)
			}
		}
	}
	b.WriteString("    queues:\n      - name: root\n")
	acl("        ", "root")
	b.WriteString("        queues:\n          - name: a\n")
	acl("            ", "a")
	b.WriteString("            queues:\n              - name: x\n")
	acl("                ", "x")
	for _, q := range []string{"b", "c"} {
		fmt.Fprintf(&b, "          - name: %s\n", q)
		acl("            ", q)
	}
	b.WriteString("          - name: teams\n            parent: true\n")
	acl("            ", "teams")
	b.WriteString("admissionController:\n  enforceQueueACLs: true\n  enforceQueueACLsMode: warn\n")
	return b.String()
}

// serve loads text and returns what serves it and a handler over it, as
// usher serve builds them.
func serve(t testing.TB, text string, audit func(admission.Record)) (*serving.Store, *admission.Handler) {
	t.Helper()
	cfg, err := config.Parse("generated.yaml", []byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	st, err := serving.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, admission.NewHandler(nil, admission.WithState(st.Admission), admission.WithAudit(audit))
}

// stampOf returns the user.info a pod CREATE's patch adds, decoded as
// YuniKorn's shim decodes it.
func stampOf(t testing.TB, patch []byte) (out struct {
	User   string   `json:"user"`
	Groups []string `json:"groups"`
}) {
	t.Helper()
	var ops []struct {
		Path  string
		Value map[string]string
	}
	if err := json.Unmarshal(patch, &ops); err != nil || len(ops) != 1 || ops[0].Path != "/metadata/annotations" {
		t.Fatalf("patch %s: %v", patch, err)
	}
	if err := json.Unmarshal([]byte(ops[0].Value[admission.UserInfoAnnotation]), &out); err != nil {
		t.Fatalf("stamp %q: %v", ops[0].Value[admission.UserInfoAnnotation], err)
	}
	return out
}

// checkWorld generates a world from seed and reviews reviews pod CREATEs
// in it: the webhook's answer (allowed, or denied and admitted in warn
// mode) and usher's placed queue must be what YuniKorn reaches with only
// the stamp's groups.
func checkWorld(t *testing.T, seed uint64, reviews int) {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	w := newWorld(r)
	var rec admission.Record
	usher, h := serve(t, w.yaml(false), func(r admission.Record) { rec = r })
	yk, _ := serve(t, w.yaml(true), nil)
	ctx := context.Background()
	for i := range reviews {
		user, ns, marker := pick(r, propUsers), pick(r, propNamespaces), pick(r, propMarkers)
		groups := append(someOf(r, propGroups), "system:authenticated")
		labels := "{}"
		if marker != "" {
			labels = fmt.Sprintf(`{"queue":%q}`, marker)
		}
		req := &admissionv1.AdmissionRequest{UID: "u", Operation: admissionv1.Create, Namespace: ns, Name: "p",
			Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, UserInfo: authenticationv1.UserInfo{Username: user, Groups: groups}}
		req.Object.Raw = fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":%s},"spec":{"containers":[{"name":"c","image":"x"}]}}`, labels)
		resp := h.Mutate(ctx, req)
		what := func() string {
			return fmt.Sprintf("seed %d review %d: %s (groups %v) creates a pod in %q with marker %q\n%s\nusher: %s", seed, i, user, groups, ns, marker, w.yaml(false), rec.Reason)
		}
		if !resp.Allowed {
			t.Fatalf("%s: denied outright: %s", what(), resp.Result.Message)
		}
		stamp := stampOf(t, resp.Patch)
		if stamp.User != user || !slices.Equal(stamp.Groups, rec.Decided) {
			t.Fatalf("%s: stamped %+v, decided %v", what(), stamp, rec.Decided)
		}
		// YuniKorn places the pod as engine.Place decides it, the queue
		// authorizer's answer for a YuniKorn marker.
		theirs, err2 := yk.Current().Place(ctx, engine.PlaceRequest{Queue: marker, Namespace: ns, User: stamp.User, Groups: stamp.Groups})
		if err2 != nil || theirs.Placed == rec.Warned {
			t.Fatalf("%s: usher allowed %v, YuniKorn with groups %v allowed %v (%s, %v)", what(), !rec.Warned, stamp.Groups, theirs.Placed, theirs.Why(), err2)
		}
		if !rec.Warned && rec.Queue != theirs.Queue {
			t.Fatalf("%s: the webhook recorded queue %q, YuniKorn with the stamp places it in %q", what(), rec.Queue, theirs.Queue)
		}
		mine, err := usher.Current().Place(ctx, engine.PlaceRequest{Queue: marker, Namespace: ns, User: user, Groups: groups})
		if err != nil || err2 != nil || mine.Placed != theirs.Placed || mine.Queue != theirs.Queue {
			t.Fatalf("%s: usher places %v %q (%s), YuniKorn %v %q (%s) %v %v", what(), mine.Placed, mine.Queue, mine.Why(),
				theirs.Placed, theirs.Queue, theirs.Why(), err, err2)
		}
	}
}

// FuzzStampIsTheDecision is the property of the stamp: over random
// configurations (queues with ACLs naming users and groups, placement
// rules with group filters, groups: resolve or merge), directory tables,
// users, API-server groups, namespaces and queue markers, YuniKorn fed
// only the stamp (groups as given, the none resolver) reaches usher's
// answer and usher's queue. Its seed corpus runs in go test; a long run:
//
//	go test ./server/ -run '^$' -fuzz FuzzStampIsTheDecision -fuzztime 25000x
//
// (each input is a world of eight reviews).
func FuzzStampIsTheDecision(f *testing.F) {
	for seed := range uint64(300) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) { checkWorld(t, seed, 8) })
}
