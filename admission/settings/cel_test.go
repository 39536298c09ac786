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
