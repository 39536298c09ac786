// Package native compiles the admission settings into the API server's
// own admission policies, the native floor (docs/native.md): a
// MutatingAdmissionPolicy that stamps user.info from request.userInfo
// where the webhook would stamp the API server's groups, and a
// ValidatingAdmissionPolicy that refuses a forged, malformed or changed
// stamp with the webhook's trust rules (config.Config.WebhookOnly lists
// what only the webhook does).
package native

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	arv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/internal/jsonscan"
)

// Floor is the native floor of one configuration. Mutating and
// MutatingBinding are nil when the floor guards only.
type Floor struct {
	Mutating          *arv1.MutatingAdmissionPolicy
	MutatingBinding   *arv1.MutatingAdmissionPolicyBinding
	Validating        *arv1.ValidatingAdmissionPolicy
	ValidatingBinding *arv1.ValidatingAdmissionPolicyBinding
}

// Objects returns the floor's objects in the order to apply them.
func (f *Floor) Objects() []any {
	out := []any{f.Validating, f.ValidatingBinding}
	if f.Mutating != nil {
		out = append(out, f.Mutating, f.MutatingBinding)
	}
	return out
}

// Name names the policies and their bindings.
const Name = "usher-floor"

// Bind names the floor's objects name and binds them to the requests the
// webhooks get: the namespaces sel selects (nil: all) that conds match.
func (f *Floor) Bind(name string, sel *metav1.LabelSelector, conds []arv1.MatchCondition) {
	f.Validating.Name, f.ValidatingBinding.Name, f.ValidatingBinding.Spec.PolicyName = name, name, name
	f.ValidatingBinding.Spec.MatchResources = &arv1.MatchResources{NamespaceSelector: sel}
	f.Validating.Spec.MatchConditions = append(f.Validating.Spec.MatchConditions, conds...)
	if f.Mutating != nil {
		f.Mutating.Name, f.MutatingBinding.Name, f.MutatingBinding.Spec.PolicyName = name, name, name
		f.MutatingBinding.Spec.MatchResources = &arv1.MatchResources{NamespaceSelector: sel}
		f.Mutating.Spec.MatchConditions = append(f.Mutating.Spec.MatchConditions, conds...)
	}
}

// Limits of the floor (docs/limits.md): usher native refuses patterns
// past the bytes matched against the user name or the groups.
const (
	MaxUserPatternBytes  = 512
	MaxGroupPatternBytes = 256
	// MaxCheckedStampBytes bounds a stamp checked by regular expression,
	// whose cost grows with its length: past it a requester's own stamp is
	// refused and a trusted setter's (who may write any identity) not parsed.
	MaxCheckedStampBytes = 24 << 10
)

// Compile renders the floor of c; stamp says whether it stamps CREATE (the
// partition's groups are the API server's), else it guards only.
func Compile(c *settings.Compiled, stamp bool) (*Floor, error) {
	for _, l := range []struct {
		what string
		m    settings.Matcher
		max  int
	}{{"systemUsers, externalUsers and propagators", slices.Concat(c.SystemUsers, c.ExternalUsers, propagators(c)), MaxUserPatternBytes},
		{"externalGroups", c.ExternalGroups, MaxGroupPatternBytes}} {
		n := 0
		for _, re := range l.m {
			n += len(re.String())
		}
		if n > l.max {
			return nil, fmt.Errorf("admissionController.accessControl: %s hold %d bytes of patterns; the native floor matches at most %d bytes "+
				"within the API server's CEL cost limit (docs/limits.md): shorten or merge them", l.what, n, l.max)
		}
	}
	kinds := rules("", arv1.Create, arv1.Update)
	kinds = append(kinds, arv1.NamedRuleWithOperations{RuleWithOperations: arv1.RuleWithOperations{Operations: []arv1.OperationType{arv1.Create},
		Rule: arv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/binding", "bindings"}}}})
	kinds = append(kinds, rules("/status", arv1.Update)...)
	v := &arv1.ValidatingAdmissionPolicy{Spec: arv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(arv1.Fail),
		MatchConstraints: &arv1.MatchResources{ResourceRules: kinds},
		MatchConditions:  []arv1.MatchCondition{{Name: settings.NamespaceConditionName, Expression: settings.NamespaceCondition(c.Config())}},
		Validations:      validations(c, stamp), Variables: variables(c, stamp)}}
	v.TypeMeta, v.ObjectMeta = meta("ValidatingAdmissionPolicy", Name)
	vb := &arv1.ValidatingAdmissionPolicyBinding{Spec: arv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: Name,
		ValidationActions: []arv1.ValidationAction{arv1.Deny}}}
	vb.TypeMeta, vb.ObjectMeta = meta("ValidatingAdmissionPolicyBinding", Name)
	f := &Floor{Validating: v, ValidatingBinding: vb}
	if !stamp {
		return f, nil
	}
	m := &arv1.MutatingAdmissionPolicy{Spec: arv1.MutatingAdmissionPolicySpec{FailurePolicy: ptr.To(arv1.Fail),
		MatchConstraints:   &arv1.MatchResources{ResourceRules: rules("", arv1.Create)},
		MatchConditions:    stampConditions(c),
		ReinvocationPolicy: arv1.NeverReinvocationPolicy, Variables: []arv1.Variable{{Name: "stamp", Expression: Stamp()}}}}
	for _, meta := range metas() {
		m.Spec.Mutations = append(m.Spec.Mutations, arv1.Mutation{PatchType: arv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &arv1.ApplyConfiguration{Expression: apply(meta)}})
	}
	m.TypeMeta, m.ObjectMeta = meta("MutatingAdmissionPolicy", Name)
	mb := &arv1.MutatingAdmissionPolicyBinding{Spec: arv1.MutatingAdmissionPolicyBindingSpec{PolicyName: Name}}
	mb.TypeMeta, mb.ObjectMeta = meta("MutatingAdmissionPolicyBinding", Name)
	f.Mutating, f.MutatingBinding = m, mb
	return f, nil
}

func meta(kind, name string) (metav1.TypeMeta, metav1.ObjectMeta) {
	return metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: kind}, metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"app.kubernetes.io/name": "usher", "app.kubernetes.io/managed-by": "usher"}}
}

// rules are the workload kinds the webhooks govern (their subresource suffix), for ops.
func rules(suffix string, ops ...arv1.OperationType) []arv1.NamedRuleWithOperations {
	var out []arv1.NamedRuleWithOperations
	for _, r := range settings.WorkloadRules(suffix, ops...) {
		out = append(out, arv1.NamedRuleWithOperations{RuleWithOperations: r})
	}
	return out
}

// metas lists the distinct paths of the pods' metadata.
func metas() []string {
	var out []string
	for _, w := range settings.Workloads {
		if !slices.Contains(out, w.Meta) {
			out = append(out, w.Meta)
		}
	}
	return out
}

// resourcesAt is a CEL test of request.resource.resource for the kinds whose pods' metadata is at meta.
func resourcesAt(meta string) string {
	var rs []string
	for _, w := range settings.Workloads {
		if w.Meta == meta {
			rs = append(rs, strconv.Quote(w.Resource))
		}
	}
	return "request.resource.resource in [" + strings.Join(rs, ", ") + "]"
}

// Fields of request the API server leaves out when empty are read with has().
const (
	user   = "request.userInfo.username"
	groups = "(has(request.userInfo.groups) ? request.userInfo.groups : [])"
	sub    = "(has(request.subResource) ? request.subResource : '')"
	// trusted is true when the requester may supply user.info.
	trusted = "(variables.userTrusted || variables.groupTrusted)"
)

// annotations is the optional map of the annotations of obj's pods' metadata.
func annotations(obj string) string {
	expr := obj + ".?metadata.?annotations" // Pod, and a Binding's
	for _, m := range metas() {
		if m != "metadata" {
			expr = "(" + resourcesAt(m) + " ? " + obj + ".?" + strings.ReplaceAll(m, ".", ".?") + ".?annotations : " + expr + ")"
		}
	}
	return expr
}

// annotation is the optional value of annotation key on obj's pods.
func annotation(obj, key string) string {
	return annotations(obj) + "[?" + strconv.Quote(key) + "]"
}

// anyMatch is true when a pattern of m matches the string s.
func anyMatch(m settings.Matcher, s string) string {
	if len(m) == 0 {
		return "false"
	}
	ps := make([]string, len(m))
	for i, re := range m {
		// A constant pattern is compiled once with the policy, a variable
		// one on every call. CEL's escapes are a superset of strconv.Quote's.
		ps[i] = s + ".matches(" + strconv.Quote(re.String()) + ")"
	}
	return "(" + strings.Join(ps, " || ") + ")"
}

// variables are the ValidatingAdmissionPolicy's, each within the API
// server's per-expression cost limit.
func variables(c *settings.Compiled, stamp bool) []arv1.Variable {
	u := anyMatch(c.ExternalUsers, user)
	if c.BypassAuth {
		u = "true"
	}
	if c.TrustControllers && len(c.SystemUsers) > 0 {
		u += " || " + anyMatch(c.SystemUsers, user)
	}
	if ps := propagators(c); len(ps) > 0 {
		// Only the webhook can read the parent a propagator copies from.
		u += " || " + anyMatch(ps, user)
	}
	g := "false"
	if len(c.ExternalGroups) > 0 {
		g = groups + ".exists(g, " + anyMatch(c.ExternalGroups, "g") + ")"
	}
	out := []arv1.Variable{{Name: "userTrusted", Expression: u}, {Name: "groupTrusted", Expression: g}}
	if stamp {
		out = append(out, arv1.Variable{Name: "stamp", Expression: Stamp()})
	}
	return out
}

// quote is the CEL expression of s as a JSON string in the canonical
// encoding. Invalid UTF-8 (written as \ufffd) cannot be told from U+FFFD
// in CEL: encodable leaves such names to the webhook.
func quote(s string) string {
	expr, class := s, ""
	for _, r := range escaped() {
		esc := string(jsonscan.AppendString(nil, string(r)))
		expr += ".replace(" + strconv.Quote(string(r)) + ", " + strconv.Quote(esc[1:len(esc)-1]) + ")"
		class += fmt.Sprintf(`\x{%x}`, r)
	}
	// A constant pattern (compiled once) tells the few names that need replacing.
	return `'"' + (` + s + ".matches(" + strconv.Quote("["+class+"]") + ") ? " + expr + " : " + s + `) + '"'`
}

// escaped lists the characters the canonical encoding escapes, backslash first.
func escaped() []rune {
	out := []rune{'\\', '"', '<', '>', '&', '\u2028', '\u2029'}
	for r := rune(0); r < 0x20; r++ {
		out = append(out, r)
	}
	return out
}

// Stamp is the CEL expression of the stamp of the request's user.
func Stamp() string {
	return `'{"user":' + ` + quote(user) + ` + ',"groups":[' + ` + groups + ".map(g, " + quote("g") + `).join(',') + ']}'`
}

// encodable is true when CEL writes the requester's stamp byte for byte
// as the webhook does: no U+FFFD (nor invalid UTF-8, which RE2 reads as
// U+FFFD), a user, and at most settings.MaxStampGroups groups.
func encodable() string {
	return fmt.Sprintf(`%s != '' && !%s.matches('\uFFFD') && size(%s) <= %d && !%s.exists(g, g.matches('\uFFFD'))`, user, user, groups, settings.MaxStampGroups, groups)
}

// stampConditions select the CREATEs the webhook would stamp with the
// API server's groups: namespace filters, no user.info, not a ReplicaSet
// a controller creates, not a legacy label under bypassAuth, encodable.
func stampConditions(c *settings.Compiled) []arv1.MatchCondition {
	out := []arv1.MatchCondition{{Name: settings.NamespaceConditionName, Expression: settings.NamespaceCondition(c.Config())},
		{Name: "unstamped", Expression: "!" + annotation("object", settings.UserInfoAnnotation) + ".hasValue()"},
		{Name: "encodable", Expression: encodable()}}
	if len(c.SystemUsers) > 0 {
		out = append(out, arv1.MatchCondition{Name: "not-controller-replicaset",
			Expression: "!(request.resource.resource == 'replicasets' && " + anyMatch(c.SystemUsers, user) + ")"})
	}
	if c.BypassAuth {
		out = append(out, arv1.MatchCondition{Name: "no-legacy-label", Expression: "!" + legacy()})
	}
	if ps := propagators(c); len(ps) > 0 {
		// The webhook copies the parent's stamp.
		out = append(out, arv1.MatchCondition{Name: "not-propagator", Expression: "!" + anyMatch(ps, user)})
	}
	return out
}

// propagators are the patterns of c's propagators.
func propagators(c *settings.Compiled) settings.Matcher {
	var out settings.Matcher
	for _, p := range c.Propagators {
		out = append(out, p.Users...)
	}
	return out
}

// legacy is true when the pods carry YuniKorn's legacy user label.
func legacy() string {
	return strings.ReplaceAll(annotations("object"), ".?annotations", ".?labels") + "[?'yunikorn.apache.org/username'].hasValue()"
}

// apply is the ApplyConfiguration that stamps the pods' metadata at meta
// (an empty one for the other kinds, or a stamp past settings.MaxStampBytes).
func apply(meta string) string {
	parts := strings.Split(meta, ".")
	body := "{" + strconv.Quote(settings.UserInfoAnnotation) + ": variables.stamp}"
	body = "Object." + meta + "{annotations: " + body + "}"
	for i := len(parts) - 1; i >= 0; i-- {
		typ := "Object"
		if i > 0 {
			typ += "." + strings.Join(parts[:i], ".")
		}
		body = typ + "{" + parts[i] + ": " + body + "}"
	}
	return fmt.Sprintf("%s && size(bytes(variables.stamp)) <= %d ? %s : Object{}", resourcesAt(meta), settings.MaxStampBytes, body)
}

// validStamp is the regular expression of a user.info that
// admission.ParseUserInfo accepts, written without U+FFFD.
var validStamp = func() string {
	ws := `[ \t\n\r]*`
	str := `"(?:[^"\\\x00-\x1f\x{FFFD}]|\\["\\/bfnrt]|\\u(?:[0-9a-cA-CefEF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2}|[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}))+"`
	u := `"user"` + ws + ":" + ws + str
	g := `"groups"` + ws + ":" + ws + `(?:null|\[` + ws + `(?:` + str + `(?:` + ws + `,` + ws + str + `)*)?` + ws + `\])`
	return `^` + ws + `\{` + ws + `(?:` + u + `(?:` + ws + `,` + ws + g + `)?|` + g + ws + `,` + ws + u + `)` + ws + `\}` + ws + `$`
}()

// validations are the ValidatingAdmissionPolicy's rules; with stamp, an
// untrusted CREATE must carry exactly the stamp the floor writes.
func validations(c *settings.Compiled, stamp bool) []arv1.Validation {
	k, d := strconv.Quote(settings.UserInfoAnnotation), strconv.Quote(settings.DirectoryGroupsAnnotation)
	info := annotation("object", settings.UserInfoAnnotation)
	create := "request.operation != 'CREATE' || " + sub + " != '' || request.resource.resource == 'bindings' || "
	guard := func(key string) string {
		return "request.operation != 'UPDATE' || " + annotation("object", key) + " == " + annotation("oldObject", key)
	}
	out := []arv1.Validation{
		{Expression: guard(settings.UserInfoAnnotation), Reason: ptr.To(metav1.StatusReasonForbidden),
			Message: "usher floor: annotation " + settings.UserInfoAnnotation + " may not be added, removed or changed on UPDATE (objects, pod templates, status)"},
		{Expression: guard(settings.DirectoryGroupsAnnotation), Reason: ptr.To(metav1.StatusReasonForbidden),
			Message: "usher floor: annotation " + settings.DirectoryGroupsAnnotation + " may not be added, removed or changed on UPDATE"},
		{Expression: "!(" + sub + " == 'binding' || request.resource.resource == 'bindings') || !object.?metadata.?annotations.orValue({}).exists(a, a in [" + k + ", " + d + "])",
			Reason: ptr.To(metav1.StatusReasonForbidden), Message: "usher floor: a Binding may not carry annotation " + settings.UserInfoAnnotation + " or " + settings.DirectoryGroupsAnnotation},
		{Expression: create + "!" + trusted + " || !" + info + ".hasValue() || size(" + info + ".value()) > " + strconv.Itoa(MaxCheckedStampBytes) +
			" || " + info + ".value().matches(" + strconv.Quote(validStamp) + ")", Reason: ptr.To(metav1.StatusReasonInvalid),
			Message: "usher floor: annotation " + settings.UserInfoAnnotation + ` is not valid: want {"user":"…","groups":["…"]} with exactly these members, valid UTF-8 without U+FFFD`},
	}
	unstamped := "(request.resource.resource == 'replicasets' && " + anyMatch(c.SystemUsers, user) + ")"
	if c.BypassAuth {
		unstamped += " || " + legacy()
	}
	// Guarding only, the floor cannot know the directory's groups the
	// webhook stamps: a stamp must name the requester, canonically, with
	// exactly the two members (so no later duplicate names another user).
	own := info + ".orValue('').startsWith('{\"user\":' + " + quote(user) + " + ',\"groups\":') && size(" + info + ".value()) <= " +
		strconv.Itoa(MaxCheckedStampBytes) + " && " + info + ".value().matches(" + strconv.Quote(validStamp) + ")"
	msg := "usher floor: annotation " + settings.UserInfoAnnotation + fmt.Sprintf(" must name the requester, as {\"user\":\"…\",\"groups\":[…]} within %d KiB: ",
		MaxCheckedStampBytes>>10)
	if stamp {
		own = encodable() + " && " + info + ".orValue('') == variables.stamp"
		msg = "usher floor: annotation " + settings.UserInfoAnnotation + " must be the stamp of the requester's own identity (remove it and it is stamped; " +
			"a user name or group holding U+FFFD or invalid UTF-8 is stamped by the webhook only): "
		out = append(out, arv1.Validation{Expression: create + trusted + " || !" + annotation("object", settings.DirectoryGroupsAnnotation) + ".hasValue()",
			Reason: ptr.To(metav1.StatusReasonForbidden), Message: "usher floor: only usher writes annotation " + settings.DirectoryGroupsAnnotation})
	}
	own = create + trusted + " || !" + info + ".hasValue() && (" + unstamped + ") || " + own
	msg += "only controllers matching systemUsers, users matching externalUsers and members of groups matching externalGroups may supply another"
	return append(out, arv1.Validation{Expression: own, Reason: ptr.To(metav1.StatusReasonForbidden), Message: msg})
}
