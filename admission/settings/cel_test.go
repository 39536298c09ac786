package settings

import (
	"regexp"
	"testing"

	"github.com/google/cel-go/cel"
)

// TestNamespaceCondition evaluates the generated expression with CEL
// (the library the API server evaluates matchConditions with) against
// the namespaces the settings bypass and process, and compares with the
// decision the handler takes from the same settings.
func TestNamespaceCondition(t *testing.T) {
	env, err := cel.NewEnv(cel.Variable("request", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		c    Config
		want string
	}{
		{"default", Config{}, `!["^kube-system$"].exists(p, request.namespace.matches(p))`},
		{"none", Config{BypassNamespaces: Patterns{}}, "true"},
		{"both", Config{BypassNamespaces: Patterns{"^kube-", `^usher\.sys"tem$`}, ProcessNamespaces: Patterns{"^team-", "batch"}}, ""},
	}
	namespaces := []string{"kube-system", "kube-public", "default", "team-a", "team-kube-", "nightly-batch", `usher.sys"tem`, "usherXsys\"tem", ""}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expr := NamespaceCondition(tt.c)
			if tt.want != "" && expr != tt.want {
				t.Fatalf("got %s, want %s", expr, tt.want)
			}
			ast, iss := env.Compile(expr)
			if iss.Err() != nil {
				t.Fatalf("%s: %v", expr, iss.Err())
			}
			prg, err := env.Program(ast)
			if err != nil {
				t.Fatal(err)
			}
			d := tt.c.Defaulted()
			for _, ns := range namespaces {
				out, _, err := prg.Eval(map[string]any{"request": map[string]any{"namespace": ns}})
				if err != nil {
					t.Fatalf("%s on %q: %v", expr, ns, err)
				}
				if got, want := out.Value() == true, !bypassedBy(d, ns); got != want {
					t.Errorf("%s on %q = %v, the settings say call usher: %v", expr, ns, got, want)
				}
			}
		})
	}
}

// bypassedBy is the settings' own rule, with the regexp package.
func bypassedBy(d Config, ns string) bool {
	any := func(ps Patterns) bool {
		for _, p := range ps {
			if regexp.MustCompile(p).MatchString(ns) {
				return true
			}
		}
		return false
	}
	return any(d.BypassNamespaces) || (len(d.ProcessNamespaces) > 0 && !any(d.ProcessNamespaces))
}

// TestDelegationCondition evaluates the usher-untrusted-setters condition
// with CEL: false (usher is not called) exactly for system:masters and
// the trusted setters, a request without groups included.
func TestDelegationCondition(t *testing.T) {
	env, err := cel.NewEnv(cel.Variable("request", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		t.Fatal(err)
	}
	expr := DelegationCondition(Config{TrustedSetters: TrustedSetters{Users: []string{"system:serviceaccount:flux:kustomize", `we"ird`}, Groups: []string{"gitops"}}})
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("%s: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		user   string
		groups []any // nil: no groups field
		call   bool
	}{
		{"admin", []any{"system:masters", "system:authenticated"}, false},
		{"system:serviceaccount:flux:kustomize", nil, false},
		{`we"ird`, []any{}, false},
		{"carol", []any{"gitops"}, false},
		{"alice", []any{"dev", "system:authenticated"}, true},
		{"alice", nil, true},
		{"system:serviceaccount:flux:kustomize2", []any{"system:mastersx"}, true},
	} {
		ui := map[string]any{"username": tt.user}
		if tt.groups != nil {
			ui["groups"] = tt.groups
		}
		out, _, err := prg.Eval(map[string]any{"request": map[string]any{"userInfo": ui}})
		if err != nil || out.Value() != tt.call {
			t.Errorf("%s %v: %v %v, want %v", tt.user, tt.groups, out, err, tt.call)
		}
	}
}

// delegatedAdministration and trustedSetters read from the ConfigMap's
// flat keys; a mode or a name that cannot be used is an error at its place.
func TestDelegationSettings(t *testing.T) {
	c, err := FromConfigMap(map[string]string{"admissionController.delegatedAdministration": "warn",
		"admissionController.trustedSetters": "users: [flux]\ngroups: [gitops]"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Compile()
	if err != nil || !out.Delegated || !out.DelegatedWarn || !out.TrustedSetter("flux", nil) || !out.TrustedSetter("x", []string{"gitops"}) ||
		!out.TrustedSetter("x", []string{"system:masters"}) || out.TrustedSetter("flux2", []string{"dev"}) {
		t.Fatalf("%+v %v", out, err)
	}
	if off := MustCompile(Config{}); off.Delegated || off.Config().DelegatedAdministration != DelegationOff {
		t.Errorf("default: %+v", off)
	}
	_, err = Config{DelegatedAdministration: "on", TrustedSetters: TrustedSetters{Groups: []string{"ok", " x"}}}.Compile()
	want := `admissionController.delegatedAdministration: "on": want off, warn or enforce` + "\n" + `admissionController.trustedSetters.groups[1]: " x" is not a name`
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
