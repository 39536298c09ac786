package settings

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The anchoring lint reads the parsed pattern: every way a pattern can
// match must be anchored as its setting requires, and the suggested fix
// must compile, pass the lint and still match what the pattern was meant
// to match.
// The lint rules of the pattern settings, from the one table.
var (
	keySystemUsers    = lintOf("accessControl.systemUsers")
	keyExternalUsers  = lintOf("accessControl.externalUsers")
	keyExternalGroups = lintOf("accessControl.externalGroups")
	keyProcessNS      = lintOf("processNamespaces")
	keyBypassNS       = lintOf("bypassNamespaces")
)

func lintOf(setting string) patternKey {
	for _, k := range keys {
		if k.setting == prefix+setting {
			return *k.lint
		}
	}
	panic(setting)
}

func TestPatternAnchoring(t *testing.T) {
	type tc struct {
		name    string
		key     patternKey
		pattern string
		// fine: no warning. Otherwise the message must contain msg and
		// the fix must be fix ("" when no rewrite is right).
		fine       bool
		msg, fix   string
		fixMatches []string // names the fix (and the original) match
		fixRejects []string // names the fix must not match
	}
	for _, tt := range []tc{
		{name: "alternation with one unanchored alternative", key: keyExternalGroups, pattern: "^trusted$|admins",
			msg: `alternative "admins" of pattern "^trusted$|admins" is not anchored: it also trusts "notadmins"`,
			fix: "^trusted$|^admins$", fixMatches: []string{"trusted", "admins"}, fixRejects: []string{"xadmins", "admins-x", "trustedx"}},
		{name: "alternation, each anchored", key: keyExternalGroups, pattern: "^trusted$|^admins$", fine: true},
		{name: "alternation factored by the parser", key: keyExternalUsers, pattern: `^a$|^ab$|\Aabc\z`, fine: true},
		{name: "group of alternatives", key: keyExternalUsers, pattern: "^(alice|bob)$", fine: true},
		{name: "bare alternatives", key: keyExternalUsers, pattern: "alice|bob",
			msg: `alternative "alice" of pattern "alice|bob" is not anchored`, fix: "^alice$|^bob$",
			fixMatches: []string{"alice", "bob"}, fixRejects: []string{"xbob", "alicex"}},
		{name: "unanchored group", key: keyExternalUsers, pattern: "^(?:alice|bob)",
			msg: `is not anchored at the end`, fix: "^(?:alice|bob)$", fixMatches: []string{"alice", "bob"}, fixRejects: []string{"bobx"}},
		{name: "service-account prefix", key: keySystemUsers, pattern: "^system:serviceaccount:kube-system:", fine: true},
		{name: "service-account prefix with wildcard", key: keySystemUsers, pattern: "^system:serviceaccount:kube-system:.*", fine: true},
		{name: "service-account prefix, any namespace", key: keySystemUsers, pattern: "^system:serviceaccount:[a-z0-9-]+:", fine: true},
		{name: "service-account prefix without ^", key: keySystemUsers, pattern: "system:serviceaccount:kube-system:",
			msg: `is not anchored at the start`, fix: "^system:serviceaccount:kube-system:",
			fixMatches: []string{"system:serviceaccount:kube-system:job-controller"},
			fixRejects: []string{"x-system:serviceaccount:kube-system:job-controller"}},
		{name: "service account without $", key: keySystemUsers, pattern: "^system:serviceaccount:kube-system:spark-operator",
			msg: `is not anchored at the end: it also trusts "system:serviceaccount:kube-system:spark-operatorx"`,
			fix: "^system:serviceaccount:kube-system:spark-operator$", fixMatches: []string{"system:serviceaccount:kube-system:spark-operator"},
			fixRejects: []string{"system:serviceaccount:kube-system:spark-operator-evil"}},
		{name: "bare service-account name", key: keySystemUsers, pattern: "spark-operator",
			msg: `is not anchored: it also trusts "system:serviceaccount:any-namespace:spark-operator" (the service account spark-operator of every namespace); ` +
				`write "^spark-operator$" for the user of that name, or "^system:serviceaccount:<namespace>:spark-operator$" for one service account`,
			fix: "^spark-operator$", fixMatches: []string{"spark-operator"}, fixRejects: []string{"system:serviceaccount:tenant:spark-operator"}},
		{name: "group prefix at a colon", key: keyExternalGroups, pattern: "^oidc:", fine: true},
		{name: "user prefix mid-name", key: keyExternalUsers, pattern: "^airflow-",
			msg: `is a prefix: it trusts every user starting with "airflow-" ("airflow-x", say); a prefix here must end with ":", a whole name with $`},
		{name: "YuniKorn's processNamespaces", key: keyProcessNS, pattern: "^spark-", fine: true},
		{name: "namespace prefix without ^", key: keyProcessNS, pattern: "spark-",
			msg: `is not anchored at the start`, fix: "^spark-", fixMatches: []string{"spark-jobs"}, fixRejects: []string{"nospark-jobs"}},
		{name: "namespace prefix mid-name", key: keyProcessNS, pattern: "^spark",
			msg: `is not anchored at the end: it also matches "sparkx"; write "^spark$" (or end it with "-" for a prefix)`,
			fix: "^spark$", fixMatches: []string{"spark"}, fixRejects: []string{"sparkle"}},
		{name: "bypass needs whole names", key: keyBypassNS, pattern: "^kube-",
			msg: `is a prefix: it matches every namespace starting with "kube-" ("kube-x", say); this setting needs whole names: list each namespace as "^name$"`},
		{name: "bypass, whole name", key: keyBypassNS, pattern: "^kube-system$", fine: true},
		{name: "bypass, unanchored", key: keyBypassNS, pattern: "kube-system",
			msg: `is not anchored: it also matches "notkube-system"`, fix: "^kube-system$",
			fixMatches: []string{"kube-system"}, fixRejects: []string{"kube-system-x", "x-kube-system"}},
		{name: "leading wildcard", key: keyExternalGroups, pattern: "^.*admins$",
			msg: `starts with a wildcard after ^: it trusts every group that merely ends with a match`},
		{name: "trailing wildcard", key: keyExternalGroups, pattern: "^admins.*$",
			msg: `ends with a wildcard: it trusts every group that merely starts with a match`},
		{name: "multi-line anchors", key: keyExternalUsers, pattern: "(?m)^admin$", msg: `uses (?m)`},
		{name: "flags over alternatives", key: keyExternalUsers, pattern: "(?i)^admin$|root", msg: `is not anchored`},
		{name: "matches everything", key: keyExternalGroups, pattern: "^admins$|", msg: `pattern "^admins$|" matches every group`},
		{name: "text anchors", key: keyExternalUsers, pattern: `\Aadmin\z`, fine: true},
		{name: "escaped dollar", key: keyExternalUsers, pattern: `^admin\$`,
			msg: `is not anchored at the end`, fix: `^admin\$$`, fixMatches: []string{"admin$"}, fixRejects: []string{"admin$x"}},
		{name: "optional part", key: keyExternalUsers, pattern: "^admins?",
			msg: `is not anchored at the end`, fix: "^admins?$", fixMatches: []string{"admin", "admins"}, fixRejects: []string{"adminsx"}},
		{name: "alternative with a class", key: keyExternalUsers, pattern: "^ok$|[|]x",
			msg: `alternative "[|]x"`, fix: "^ok$|^[|]x$", fixMatches: []string{"ok", "|x"}, fixRejects: []string{"a|x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			msg, fix, warn := tt.key.lintPattern(tt.pattern)
			if tt.fine {
				if warn {
					t.Fatalf("%q warns: %s", tt.pattern, msg)
				}
				return
			}
			if !warn {
				t.Fatalf("%q: no warning", tt.pattern)
			}
			if !strings.Contains(msg, tt.msg) {
				t.Errorf("message\n%s\ndoes not contain\n%s", msg, tt.msg)
			}
			if fix != tt.fix {
				t.Fatalf("fix %q, want %q (message: %s)", fix, tt.fix, msg)
			}
			if fix == "" {
				if strings.Contains(msg, "; write ") {
					t.Errorf("no fix, yet the message suggests one: %s", msg)
				}
				return
			}
			if !strings.Contains(msg, "write "+strconv.Quote(fix)) {
				t.Errorf("the message must suggest the fix %q: %s", fix, msg)
			}
			re, err := regexp.Compile(fix)
			if err != nil {
				t.Fatalf("fix %q does not compile: %v", fix, err)
			}
			if m, _, warn := tt.key.lintPattern(fix); warn {
				t.Errorf("fix %q warns itself: %s", fix, m)
			}
			orig := regexp.MustCompile(tt.pattern)
			for _, n := range tt.fixMatches {
				if !orig.MatchString(n) || !re.MatchString(n) {
					t.Errorf("%q: original matches %v, fix %v; both must", n, orig.MatchString(n), re.MatchString(n))
				}
			}
			for _, n := range tt.fixRejects {
				if re.MatchString(n) {
					t.Errorf("fix %q matches %q", fix, n)
				}
			}
		})
	}
}

// YuniKorn documents processNamespaces: "^spark-,^mpi-" (a comma
// separated list): it gets no advice, and an unanchored version gets
// advice that keeps it a list of prefixes.
func TestProcessNamespacesAsDocumented(t *testing.T) {
	if ws := (Config{ProcessNamespaces: ParsePatterns("^spark-,^mpi-")}).Warnings(); len(ws) != 0 {
		t.Fatalf("YuniKorn's documented value warns: %v", ws)
	}
	ws := (Config{ProcessNamespaces: ParsePatterns("spark-, mpi-")}).Warnings()
	var fixes []string
	for _, w := range ws {
		fixes = append(fixes, w.Fix)
		if w.Setting != "admissionController.processNamespaces" {
			t.Errorf("setting %q", w.Setting)
		}
	}
	fixed := strings.Join(fixes, ",")
	if fixed != "^spark-,^mpi-" {
		t.Fatalf("fixes %q, want ^spark-,^mpi-", fixed)
	}
	c := Config{ProcessNamespaces: ParsePatterns(fixed)}
	if ws := c.Warnings(); len(ws) != 0 {
		t.Fatalf("the fixed value warns: %v", ws)
	}
	cc := MustCompile(c)
	for ns, want := range map[string]bool{"spark-etl": true, "mpi-sim": true, "default": false, "myspark-etl": false} {
		if got := cc.ProcessNamespace(ns); got != want {
			t.Errorf("namespace %s processed %v, want %v", ns, got, want)
		}
	}
}

// Patterns from the environment are linted under the variable's name.
func TestEnvWarnings(t *testing.T) {
	env := map[string]string{
		"ADMISSION_CONTROLLER_SYSTEM_USERS":       "^system:serviceaccount:kube-system:,spark-operator",
		"ADMISSION_CONTROLLER_EXTERNAL_GROUPS":    "^admins$",
		"ADMISSION_CONTROLLER_BYPASS_AUTH":        "true",
		"ADMISSION_CONTROLLER_BYPASS_CONTROLLERS": "false",
	}
	_, ws, err := Resolve(Config{}, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.String())
	}
	want := []string{
		`ADMISSION_CONTROLLER_SYSTEM_USERS: pattern "spark-operator" is not anchored: it also trusts "system:serviceaccount:any-namespace:spark-operator"`,
		`ADMISSION_CONTROLLER_BYPASS_AUTH: is true`,
		`ADMISSION_CONTROLLER_BYPASS_CONTROLLERS: is false`,
	}
	if len(got) != len(want) {
		t.Fatalf("warnings:\n%s", strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d:\n%s\nwant prefix\n%s", i, got[i], want[i])
		}
	}
	if ws[0].Index != 1 || ws[0].Pattern != "spark-operator" || ws[0].Fix != "^spark-operator$" {
		t.Errorf("warning fields %+v", ws[0])
	}
	if _, ws, _ := Resolve(Config{}, nil); len(ws) != 0 {
		t.Fatalf("no variables, warnings %v", ws)
	}
}

// Through the public API: the anchoring check reads the parsed pattern, so
// an anchored-looking alternation with an unanchored alternative warns,
// and the advice for a prefix never adds a $ that would match nothing.
func TestWarningsReadTheParsedPattern(t *testing.T) {
	for _, tt := range []struct {
		cfg         Config
		want, never string
	}{
		{Config{AccessControl: AccessControl{ExternalGroups: Patterns{"^trusted$|admins"}}},
			`alternative "admins" of pattern "^trusted$|admins" is not anchored`, ""},
		{Config{AccessControl: AccessControl{SystemUsers: Patterns{"system:serviceaccount:kube-system:"}}},
			`write "^system:serviceaccount:kube-system:"`, `kube-system:$`},
		{Config{ProcessNamespaces: Patterns{"spark-"}}, `write "^spark-"`, `spark-$`},
	} {
		var all []string
		for _, w := range tt.cfg.Warnings() {
			all = append(all, w.String())
		}
		got := strings.Join(all, "\n")
		if !strings.Contains(got, tt.want) || (tt.never != "" && strings.Contains(got, tt.never)) {
			t.Errorf("warnings:\n%s\nwant %q, never %q", got, tt.want, tt.never)
		}
	}
}

// Whatever the pattern, the lint does not panic, and a fix it suggests
// compiles, passes the lint itself and still matches every name the
// original spelt out as a whole alternative.
func FuzzLintPattern(f *testing.F) {
	for _, s := range []string{"^trusted$|admins", "system:serviceaccount:kube-system:", "^spark-", "spark-operator",
		"(?m)^a$", "(?i)a|b", "^.*x$", "[|]x|y", `\Aa\z|b`, "a{2,}|^b", "((a|b)|c)?d", "^$", "x**"} {
		f.Add(s)
	}
	pks := []patternKey{keySystemUsers, keyExternalGroups, keyProcessNS, keyBypassNS}
	f.Fuzz(func(t *testing.T, p string) {
		if len(p) > 200 {
			return
		}
		for _, k := range pks {
			_, fix, _ := k.lintPattern(p)
			if fix == "" {
				continue
			}
			re, err := regexp.Compile(fix)
			if err != nil {
				t.Fatalf("%s: fix %q of %q does not compile: %v", k.noun, fix, p, err)
			}
			if m, _, warn := k.lintPattern(fix); warn {
				t.Fatalf("%s: fix %q of %q warns: %s", k.noun, fix, p, m)
			}
			vs, _ := analyse(p)
			for _, v := range vs {
				if v.literal && !re.MatchString(v.last) {
					t.Fatalf("%s: fix %q of %q no longer matches %q", k.noun, fix, p, v.last)
				}
			}
		}
	})
}

func TestOperatorInExternalUsers(t *testing.T) {
	ws := Config{AccessControl: AccessControl{ExternalUsers: Patterns{"^system:serviceaccount:airflow:", "^system:serviceaccount:spark-operator:"}}}.Warnings()
	var got []string
	for _, w := range ws {
		if strings.Contains(w.Message, "propagators") {
			got = append(got, fmt.Sprintf("%d %s", w.Index, w.Pattern))
		}
	}
	if len(got) != 1 || got[0] != "1 ^system:serviceaccount:spark-operator:" {
		t.Fatalf("warnings %q", got)
	}
}

func TestOperatorKeysFromConfigMap(t *testing.T) {
	c, err := FromConfigMap(map[string]string{
		"admissionController.customResources":                "- {group: ray.io, version: v1, kind: RayJob, resource: rayjobs, templates: [spec.rayClusterSpec.headGroupSpec.template.metadata]}",
		"admissionController.accessControl.propagators":      "- {users: '^system:serviceaccount:ray:kuberay-operator$', parents: [ray.io/RayJob]}",
		"admissionController.accessControl.unstampedParents": "deny",
	})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := c.Compile()
	if err != nil {
		t.Fatal(err)
	}
	p := cc.Propagator("system:serviceaccount:ray:kuberay-operator")
	if p == nil || len(p.Parents) != 1 || p.Parents[0].Resource != "rayjobs" || !cc.UnstampedDeny || cc.Custom("ray.io", "RayJob") == nil {
		t.Fatalf("compiled %+v", cc)
	}
}
