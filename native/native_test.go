package native_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	arv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/native"
)

// expr is a boolean or string expression for the API server's compiler.
type expr struct {
	text string
	out  *celgo.Type
}

func (e expr) GetExpression() string      { return e.text }
func (e expr) ReturnTypes() []*celgo.Type { return []*celgo.Type{e.out} }

var compiler = plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))

// program compiles text as the API server compiles a policy's expressions.
func program(t testing.TB, text string, out *celgo.Type) celgo.Program {
	t.Helper()
	r := compiler.CompileCELExpression(expr{text, out}, plugincel.OptionalVariableDeclarations{}, environment.StoredExpressions)
	if r.Error != nil {
		t.Fatalf("%v\n%s", r.Error, text)
	}
	return r.Program
}

// eval runs p on a request and returns its value and its runtime cost.
func eval(t testing.TB, p celgo.Program, vars map[string]any) (any, uint64) {
	t.Helper()
	v, det, err := p.Eval(vars)
	if err != nil {
		t.Fatalf("eval: %v", err)
	}
	return v.Value(), *det.ActualCost()
}

func request(op, resource, sub, user string, groups ...string) map[string]any {
	ui := map[string]any{"username": user}
	if groups != nil {
		gs := make([]any, len(groups))
		for i, g := range groups {
			gs[i] = g
		}
		ui["groups"] = gs
	}
	r := map[string]any{"operation": op, "namespace": "team",
		"resource": map[string]any{"group": "", "version": "v1", "resource": resource}, "userInfo": ui}
	if sub != "" { // the API server leaves out what is empty
		r["subResource"] = sub
	}
	return r
}

var stampProgram = sync1(func() celgo.Program { return program(&testing.T{}, native.Stamp(), celgo.StringType) })

func sync1[T any](f func() T) func() T {
	var v T
	var done bool
	return func() T {
		if !done {
			v, done = f(), true
		}
		return v
	}
}

// checkStamp compares the CEL stamp with the webhook's for user and groups.
func checkStamp(t testing.TB, user string, groups []string) {
	want := string(settings.AppendUserInfo(nil, user, groups))
	got, _ := eval(t, stampProgram(), map[string]any{"request": request("CREATE", "pods", "", user, groups...)})
	if got != want {
		t.Fatalf("user %q groups %q:\nCEL     %s\nwebhook %s", user, groups, got, want)
	}
	if j, _ := json.Marshal(admission.UserInfo{User: user, Groups: groups}); string(j) != want && groups != nil {
		t.Fatalf("encoding/json writes %s, the webhook %s", j, want)
	}
}

// TestStampBytes: the floor's CEL writes the webhook's bytes for names
// with every character the canonical encoding escapes.
func TestStampBytes(t *testing.T) {
	names := []string{"alice", `a"b\c`, "<script>&amp;", "tab\there\nnl\r\b\f\x00\x01\x1f\x7f", "zoë", "日本語",
		"line\u2028sep\u2029", "emoji 😀", "system:serviceaccount:ns:sa", strings.Repeat("long-", 200), "\\u003c", "a'b"}
	for r := rune(0); r < 0x80; r++ {
		names = append(names, "x"+string(r)+"y")
	}
	for _, n := range names {
		checkStamp(t, n, []string{n, "system:authenticated"})
	}
	checkStamp(t, "alice", nil)
	checkStamp(t, "alice", []string{})
}

// encodableProgram is the floor's matchCondition that leaves to the
// webhook the names CEL cannot write as it does.
var encodableProgram = sync1(func() celgo.Program {
	t := &testing.T{}
	f, _ := native.Compile(compiled(t, settings.Config{}), true)
	for _, mc := range f.Mutating.Spec.MatchConditions {
		if mc.Name == "encodable" {
			return program(t, mc.Expression, celgo.BoolType)
		}
	}
	panic("no encodable condition")
})

// FuzzStamp feeds the same names to both writers: the floor stamps a
// requester only when it writes the webhook's bytes, and leaves exactly
// the names holding U+FFFD or invalid UTF-8 to the webhook.
func FuzzStamp(f *testing.F) {
	for _, s := range []string{"alice", "\u2028", "\xff", "<>&", "\x00\x1f", "é\u0301", "a\"\\", "\ufffd", "\xc8"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, user, group string) {
		if user == "" {
			return
		}
		enc, _ := eval(t, encodableProgram(), map[string]any{"request": request("CREATE", "pods", "", user, group, "system:authenticated")})
		odd := func(s string) bool { return !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) }
		if enc != !(odd(user) || odd(group)) {
			t.Fatalf("user %q group %q: encodable %v", user, group, enc)
		}
		if enc == true {
			checkStamp(t, user, []string{group, "system:authenticated"})
		}
	})
}

func compiled(t testing.TB, c settings.Config) *settings.Compiled {
	t.Helper()
	cc, err := c.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

func pod(ann map[string]string) map[string]any {
	a := map[string]any{}
	for k, v := range ann {
		a[k] = v
	}
	return map[string]any{"metadata": map[string]any{"name": "p", "annotations": a}}
}

func deployment(ann map[string]string) map[string]any {
	return map[string]any{"metadata": map[string]any{"name": "d"}, "spec": map[string]any{"template": pod(ann)}}
}

// policy compiles the expressions of a policy with its variables, as the
// API server does, and evaluates its variables on vars, adding their costs.
type policy struct {
	cc   *plugincel.CompositedCompiler
	vars []arv1.Variable
}

func newPolicy(t testing.TB, vars []arv1.Variable) policy {
	cc, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vars {
		if r := cc.CompileAndStoreVariable(named{expr{v.Expression, celgo.AnyType}, v.Name}, plugincel.OptionalVariableDeclarations{}, environment.StoredExpressions); r.Error != nil {
			t.Fatalf("%v\n%s", r.Error, v.Expression)
		}
	}
	return policy{cc, vars}
}

func (p policy) program(t testing.TB, text string) celgo.Program {
	t.Helper()
	r := p.cc.CompileCELExpression(expr{text, celgo.BoolType}, plugincel.OptionalVariableDeclarations{}, environment.StoredExpressions)
	if r.Error != nil {
		t.Fatalf("%v\n%s", r.Error, text)
	}
	return r.Program
}

// bind evaluates the variables on vars and returns their cost.
func (p policy) bind(t testing.TB, vars map[string]any) uint64 {
	values, total := map[string]any{}, uint64(0)
	for _, v := range p.vars {
		val, cost := eval(t, program(t, v.Expression, celgo.AnyType), vars)
		values[v.Name] = val
		total += cost
		if testing.Verbose() {
			t.Logf("variable %s: cost %d", v.Name, cost)
		}
		if cost > celconfig.PerCallLimit {
			t.Errorf("variable %s costs %d", v.Name, cost)
		}
	}
	vars["variables"] = values
	return total
}

// admits runs the policy's match conditions and validations on vars.
func admits(t *testing.T, v *arv1.ValidatingAdmissionPolicy, vars map[string]any) bool {
	t.Helper()
	p := newPolicy(t, v.Spec.Variables)
	p.bind(t, vars)
	for _, mc := range v.Spec.MatchConditions {
		if ok, _ := eval(t, program(t, mc.Expression, celgo.BoolType), vars); ok != true {
			return true
		}
	}
	for _, val := range v.Spec.Validations {
		if ok, _ := eval(t, p.program(t, val.Expression), vars); ok != true {
			return false
		}
	}
	return true
}

// TestValidations: the floor's ValidatingAdmissionPolicy refuses what the
// webhook refuses on the requests of the e2e scenarios.
func TestValidations(t *testing.T) {
	f, err := native.Compile(compiled(t, settings.Config{AccessControl: settings.AccessControl{ExternalUsers: settings.Patterns{"^airflow$"}}}), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range f.Validating.Spec.Validations {
		if r := *v.Reason; r != metav1.StatusReasonForbidden && r != metav1.StatusReasonInvalid {
			t.Errorf("reason %s: the API server takes Forbidden, Invalid or RequestEntityTooLarge", r)
		}
	}
	alice := string(settings.AppendUserInfo(nil, "alice", []string{"dev"}))
	ui := settings.UserInfoAnnotation
	rc := "system:serviceaccount:kube-system:replicaset-controller"
	for _, c := range []struct {
		name     string
		req      map[string]any
		obj, old map[string]any
		want     bool
	}{
		{"own stamp", request("CREATE", "pods", "", "alice", "dev"), pod(map[string]string{ui: alice}), nil, true},
		{"no stamp", request("CREATE", "pods", "", "alice", "dev"), pod(nil), nil, false},
		{"forged", request("CREATE", "pods", "", "bob", "dev"), pod(map[string]string{ui: alice}), nil, false},
		{"forged template", request("CREATE", "deployments", "", "bob", "dev"), deployment(map[string]string{ui: alice}), nil, false},
		{"own groups differ", request("CREATE", "pods", "", "alice", "dev", "ops"), pod(map[string]string{ui: alice}), nil, false},
		{"controller copies", request("CREATE", "pods", "", rc), pod(map[string]string{ui: alice}), nil, true},
		{"controller replicaset", request("CREATE", "replicasets", "", rc), deployment(nil), nil, true},
		{"external user", request("CREATE", "pods", "", "airflow"), pod(map[string]string{ui: alice}), nil, true},
		{"case variant", request("CREATE", "pods", "", "airflow"), pod(map[string]string{ui: `{"User":"alice"}`}), nil, false},
		{"duplicate", request("CREATE", "pods", "", "airflow"), pod(map[string]string{ui: `{"user":"a","user":"alice"}`}), nil, false},
		{"update same", request("UPDATE", "pods", "", "bob"), pod(map[string]string{ui: alice}), pod(map[string]string{ui: alice}), true},
		{"update change", request("UPDATE", "deployments", "", "alice"), deployment(map[string]string{ui: `{"user":"bob","groups":[]}`}), deployment(map[string]string{ui: alice}), false},
		{"update remove", request("UPDATE", "pods", "", rc), pod(nil), pod(map[string]string{ui: alice}), false},
		{"status change", request("UPDATE", "pods", "status", "bob"), pod(map[string]string{ui: "x"}), pod(map[string]string{ui: alice}), false},
		{"binding", request("CREATE", "pods", "binding", "bob"), pod(map[string]string{ui: alice}), nil, false},
		{"directory groups", request("CREATE", "pods", "", "alice", "dev"), pod(map[string]string{ui: alice, settings.DirectoryGroupsAnnotation: "[]"}), nil, false},
		{"kube-system", map[string]any{"namespace": "kube-system", "operation": "CREATE", "userInfo": map[string]any{"username": "bob"}}, pod(nil), nil, true},
	} {
		vars := map[string]any{"request": c.req, "object": c.obj, "oldObject": c.old}
		if c.old == nil {
			vars["oldObject"] = types.NullValue
		}
		if got := admits(t, f.Validating, vars); got != c.want {
			t.Errorf("%s: admitted %v, want %v", c.name, got, c.want)
		}
	}
}

// TestGuardOnlyRefusesForgery: guarding only (the partition's groups are
// the directory's, which the floor cannot know), an untrusted requester's
// stamp must name them canonically with exactly the two members: a later
// duplicate or case-variant member, which encoding/json (YuniKorn's reader)
// would take, is refused, as is a stamp past MaxCheckedStampBytes; their
// own stamp with groups the floor cannot check is admitted (docs/native.md).
func TestGuardOnlyRefusesForgery(t *testing.T) {
	f, err := native.Compile(compiled(t, settings.Config{}), false)
	if err != nil {
		t.Fatal(err)
	}
	many := make([]string, 1000)
	for i := range many {
		many[i] = fmt.Sprintf("group-%04d-%s", i, strings.Repeat("x", 14))
	}
	for _, c := range []struct {
		stamp string
		want  bool
	}{
		{`{"user":"bob","groups":[],"user":"alice"}`, false},
		{`{"user":"bob","groups":[],"User":"alice","Groups":["admins"]}`, false},
		{`{"user":"bob","groups":x`, false},
		{`{"user":"alice","groups":[]}`, false},
		{`{"user":"bob","groups":["dev","analysts"]}`, true},
		{string(settings.AppendUserInfo(nil, "bob", many)), false},
	} {
		vars := map[string]any{"request": request("CREATE", "pods", "", "bob", "dev"), "object": pod(map[string]string{settings.UserInfoAnnotation: c.stamp}), "oldObject": types.NullValue}
		if got := admits(t, f.Validating, vars); got != c.want {
			t.Errorf("%.80s (%d bytes): admitted %v, want %v", c.stamp, len(c.stamp), got, c.want)
		}
	}
}

// TestTrustedBigStamp: a controller copying a template's stamp of 40 KiB
// (past MaxCheckedStampBytes, within the webhook's 64 KiB) is admitted
// within the API server's cost limit, so a Deployment with it still gets
// its ReplicaSet and pods.
func TestTrustedBigStamp(t *testing.T) {
	f, err := native.Compile(compiled(t, settings.Config{}), true)
	if err != nil {
		t.Fatal(err)
	}
	many := make([]string, 1400)
	for i := range many {
		many[i] = fmt.Sprintf("group-%04d-%s", i, strings.Repeat("x", 14))
	}
	stamp := string(settings.AppendUserInfo(nil, "alice", many))
	rc := "system:serviceaccount:kube-system:replicaset-controller"
	for _, obj := range []map[string]any{pod(map[string]string{settings.UserInfoAnnotation: stamp}), deployment(map[string]string{settings.UserInfoAnnotation: stamp})} {
		vars := map[string]any{"request": request("CREATE", "pods", "", rc), "object": obj, "oldObject": types.NullValue}
		if !admits(t, f.Validating, vars) {
			t.Errorf("the ReplicaSet controller's copy of a %d-byte stamp is refused", len(stamp))
		}
	}
}

// TestValidStamp: a trusted setter's user.info passes the floor's pattern
// exactly when admission.ParseUserInfo accepts it (U+FFFD aside).
func TestValidStamp(t *testing.T) {
	f, _ := native.Compile(compiled(t, settings.Config{AccessControl: settings.AccessControl{ExternalUsers: settings.Patterns{"^airflow$"}}}), false)
	for _, s := range []string{`{"user":"a"}`, `{"user":"a","groups":null}`, `{"user":"a","groups":[]}`, ` { "groups" : ["x", "y"] , "user" : "a" } `,
		`{"user":"a\u00e9\ud83d\ude00"}`, `{"user":"a\ud83d"}`, `{"user":"\udc00"}`, `{"user":""}`, `{"user":"a","groups":[""]}`, `{"User":"a"}`,
		`{"user":"a","user":"b"}`, `{"user":"a","x":1}`, `{"user":"a\/b\n"}`, `{"us\u0065r":"a"}`, `["a"]`, `{"user":"a"`, "{\"user\":\"a\x01\"}", `{"groups":[],"user":"a","groups":[]}`} {
		_, err := admission.ParseUserInfo(s)
		got := admits(t, f.Validating, map[string]any{"request": request("CREATE", "pods", "", "airflow"), "object": pod(map[string]string{settings.UserInfoAnnotation: s}), "oldObject": types.NullValue})
		if got != (err == nil) {
			t.Errorf("%s: floor admits %v, ParseUserInfo says %v", s, got, err)
		}
	}
}

type named struct {
	expr
	name string
}

func (n named) GetName() string { return n.name }

// TestMutatingCompiles: the MutatingAdmissionPolicy's conditions and
// apply configurations compile in the API server's environment.
func TestMutatingCompiles(t *testing.T) {
	f, err := native.Compile(compiled(t, settings.Config{AccessControl: settings.AccessControl{BypassAuth: true, ExternalGroups: settings.Patterns{"^etl$"}}}), true)
	if err != nil {
		t.Fatal(err)
	}
	for _, mc := range f.Mutating.Spec.MatchConditions {
		program(t, mc.Expression, celgo.BoolType)
	}
	cc, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	decl := plugincel.OptionalVariableDeclarations{HasPatchTypes: true}
	if r := cc.CompileAndStoreVariable(named{expr{f.Mutating.Spec.Variables[0].Expression, celgo.AnyType}, "stamp"}, decl, environment.StoredExpressions); r.Error != nil {
		t.Fatal(r.Error)
	}
	for _, m := range f.Mutating.Spec.Mutations {
		ac := &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}
		if r := cc.CompileCELExpression(ac, decl, environment.StoredExpressions); r.Error != nil {
			t.Fatalf("%v\n%s", r.Error, ac.Expression)
		}
	}
}

// TestCost: with MaxPatternBytes of trust patterns and a requester whose
// stamp is just within MaxStampBytes, every expression of the floor stays
// within the API server's per-expression limit, and each policy within
// its budget (docs/limits.md).
func TestCost(t *testing.T) {
	upTo := func(format string, max int) (ps settings.Patterns) {
		for n := 0; ; n++ {
			p := fmt.Sprintf(format, n)
			if len(strings.Join(ps, ""))+len(p) > max {
				return ps
			}
			ps = append(ps, p)
		}
	}
	users, grps := upTo("^system:serviceaccount:team-%04d:[a-z0-9-]+$", native.MaxUserPatternBytes), upTo("^team-%04d-[a-z]+$", native.MaxGroupPatternBytes)
	c := compiled(t, settings.Config{AccessControl: settings.AccessControl{SystemUsers: users[:len(users)/2], ExternalUsers: users[len(users)/2:], ExternalGroups: grps}})
	if _, err := native.Compile(compiled(t, settings.Config{AccessControl: settings.AccessControl{ExternalGroups: append(grps, "^team-x$")}}), true); err == nil ||
		!strings.Contains(err.Error(), "externalGroups hold") {
		t.Errorf("past the limit: %v", err)
	}
	f, err := native.Compile(c, true)
	if err != nil {
		t.Fatal(err)
	}
	many := make([]string, settings.MaxStampGroups)
	for i := range many {
		many[i] = fmt.Sprintf("system:serviceaccount:t%04d", i)
	}
	long := strings.Repeat("system:serviceaccount:team-0001:", (settings.MaxStampBytes-100)/32)
	for _, r := range []struct {
		name   string
		user   string
		groups []string
	}{{"long name", long, []string{"dev"}}, {"2048 groups", "alice", many}} {
		stamp := string(settings.AppendUserInfo(nil, r.user, r.groups))
		if len(stamp) > settings.MaxStampBytes {
			t.Fatalf("%s: stamp of %d bytes", r.name, len(stamp))
		}
		for _, op := range []string{"CREATE", "UPDATE"} {
			vars := map[string]any{"request": request(op, "deployments", "", r.user, r.groups...), "object": deployment(map[string]string{settings.UserInfoAnnotation: stamp}),
				"oldObject": deployment(map[string]string{settings.UserInfoAnnotation: stamp})}
			p := newPolicy(t, f.Validating.Spec.Variables)
			total := p.bind(t, vars)
			exprs := []string{}
			for _, mc := range f.Validating.Spec.MatchConditions {
				exprs = append(exprs, mc.Expression)
			}
			for _, v := range f.Validating.Spec.Validations {
				exprs = append(exprs, v.Expression)
			}
			for _, e := range exprs {
				out, det, err := p.program(t, e).Eval(vars)
				if err != nil {
					t.Errorf("%s %s: %v: %.300s", r.name, op, err, e)
					continue
				}
				v, cost := out.Value(), *det.ActualCost()
				if v != true {
					t.Errorf("%s %s: refused by %.200s", r.name, op, e)
				}
				if cost > celconfig.PerCallLimit {
					t.Errorf("%s %s: cost %d past the limit of %d: %.200s", r.name, op, cost, celconfig.PerCallLimit, e)
				}
				total += cost
			}
			t.Logf("%s %s: validating policy cost %d (budget %d)", r.name, op, total, celconfig.RuntimeCELCostBudget)
			if total > celconfig.RuntimeCELCostBudget {
				t.Errorf("%s %s: policy cost %d past the budget", r.name, op, total)
			}
		}
		total := uint64(0)
		vars := map[string]any{"request": request("CREATE", "deployments", "", r.user, r.groups...), "object": deployment(nil)}
		for _, mc := range f.Mutating.Spec.MatchConditions {
			_, cost := eval(t, program(t, mc.Expression, celgo.BoolType), vars)
			total += cost
		}
		_, cost := eval(t, stampProgram(), vars)
		t.Logf("%s: mutating policy cost %d + stamp %d", r.name, total, cost)
		if cost > celconfig.PerCallLimit || total+cost > celconfig.RuntimeCELCostBudget {
			t.Errorf("%s: the stamp costs %d", r.name, cost)
		}
	}
}

// FuzzValidStamp: a trusted setter's user.info passes the floor exactly
// when admission.ParseUserInfo accepts it, U+FFFD aside (which the floor
// refuses: CEL cannot tell it from invalid UTF-8).
func FuzzValidStamp(f *testing.F) {
	fl, _ := native.Compile(compiled(f, settings.Config{}), false)
	var check celgo.Program
	for _, v := range fl.Validating.Spec.Validations {
		if strings.Contains(v.Message, "is not valid") {
			check = newPolicy(f, fl.Validating.Spec.Variables).program(f, v.Expression)
		}
	}
	for _, s := range []string{`{"user":"a","groups":["b"]}`, `{"groups":null,"user":"a"}`, `{"user":"\ud800\udc00"}`, `{"user":"a","User":"b"}`, " {\"user\" :\"a\"}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		vars := map[string]any{"request": request("CREATE", "pods", "", "airflow"), "object": pod(map[string]string{settings.UserInfoAnnotation: s}),
			"variables": map[string]any{"userTrusted": true, "groupTrusted": false}}
		got, _ := eval(t, check, vars)
		_, err := admission.ParseUserInfo(s)
		if want := err == nil && !strings.ContainsRune(s, utf8.RuneError) && len(s) <= settings.MaxStampBytes; got != want {
			t.Fatalf("%q: floor admits %v, ParseUserInfo: %v", s, got, err)
		}
	})
}

// TestPropagatorsLeftToTheWebhook: the floor lets a propagator's copied
// stamp through (only the webhook can read its parent) and does not stamp
// what a propagator creates with the propagator's own identity, which the
// webhook would then have to refuse as another identity than the parent's.
func TestPropagatorsLeftToTheWebhook(t *testing.T) {
	op := "system:serviceaccount:spark-operator:spark-operator-controller"
	f, err := native.Compile(compiled(t, settings.Config{AccessControl: settings.AccessControl{
		Propagators: []settings.Propagator{{Users: settings.Patterns{"^" + op + "$"}, Parents: []string{"Pod"}}}}}), true)
	if err != nil {
		t.Fatal(err)
	}
	alice := string(settings.AppendUserInfo(nil, "alice", []string{"dev"}))
	for _, c := range []struct {
		user string
		want bool
	}{{op, true}, {"bob", false}} {
		vars := map[string]any{"request": request("CREATE", "pods", "", c.user), "object": pod(map[string]string{settings.UserInfoAnnotation: alice}), "oldObject": types.NullValue}
		if got := admits(t, f.Validating, vars); got != c.want {
			t.Errorf("%s copies alice's stamp: admitted %v, want %v", c.user, got, c.want)
		}
	}
	for _, c := range []struct {
		user  string
		stamp bool
	}{{op, false}, {"bob", true}} {
		vars := map[string]any{"request": request("CREATE", "pods", "", c.user), "object": pod(nil)}
		stamps := true
		for _, mc := range f.Mutating.Spec.MatchConditions {
			if ok, _ := eval(t, program(t, mc.Expression, celgo.BoolType), vars); ok != true {
				stamps = false
			}
		}
		if stamps != c.stamp {
			t.Errorf("%s's unstamped pod: the floor stamps it %v, want %v", c.user, stamps, c.stamp)
		}
	}
}
