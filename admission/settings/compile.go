package settings

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/usherhq/usher/internal/clip"
	"github.com/usherhq/usher/internal/suggest"
)

// Compiled is a validated Config, prepared for the webhook; immutable.
type Compiled struct {
	cfg Config

	BypassAuth, TrustControllers bool
	EnforceQueue, EnforceDelete  bool
	QueueWarn, DeleteWarn        bool // the modes are warn
	// stampGroups is given; stampGroupsOnError is deny.
	StampGiven, StampDeny                      bool
	ModifyACLKey, Partition                    string
	SystemUsers, ExternalUsers, ExternalGroups Matcher
	Sources                                    []Source

	// customResources, accessControl.propagators, unstampedParents: deny.
	CustomKinds   []Kind
	Propagators   []CompiledPropagator
	UnstampedDeny bool
	// Delegated: delegatedAdministration is warn or enforce; DelegatedWarn: warn.
	Delegated, DelegatedWarn bool

	processNS, bypassNS Matcher
}

// Source is a compiled queue source.
type Source struct {
	QueueSource
	Annotation bool // Kind is annotation
	PodLevel   bool // the scheduler reads the marker on the pods only
	Place      bool // YuniKorn's placement rules decide the queue (its scheduler is yunikorn)
}

// Matcher is a compiled pattern list.
type Matcher []*regexp.Regexp

// Match reports whether a pattern matches s.
func (m Matcher) Match(s string) bool {
	return slices.ContainsFunc(m, func(re *regexp.Regexp) bool { return re.MatchString(s) })
}

// MatchAny reports whether a pattern matches one of ss.
func (m Matcher) MatchAny(ss []string) bool {
	return len(m) > 0 && slices.ContainsFunc(ss, m.Match)
}

// SettingError is a setting that cannot be used, at its place: the YAML
// path or the variable that gave it, the list item (Index, -1 for none)
// and the key inside it (Field).
type SettingError struct {
	Setting, Variable string
	Index             int
	Field             string
	Msg               string
}

// Error renders "admissionController.queueSources[1].key: message", the
// variable in place of the setting if one gave it.
func (e *SettingError) Error() string {
	p := cmp.Or(e.Variable, e.Setting)
	if e.Index >= 0 {
		p += fmt.Sprintf("[%d]", e.Index)
	}
	if e.Field != "" {
		p += "." + e.Field
	}
	return p + ": " + e.Msg
}

func settingErr(setting string, index int, field, format string, args ...any) *SettingError {
	return &SettingError{Setting: setting, Index: index, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// SettingErrors returns the SettingErrors in err, in order.
func SettingErrors(err error) []*SettingError { return joined[*SettingError](err) }

// joined returns the errors of type E in err, in the order joined.
func joined[E error](err error) []E {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []E
		for _, e := range j.Unwrap() {
			out = append(out, joined[E](e)...)
		}
		return out
	}
	if e, ok := errors.AsType[E](err); ok {
		return []E{e}
	}
	return nil
}

// Compile validates c (after defaults) and prepares it for the webhook;
// every problem is a *SettingError, joined.
func (c Config) Compile() (*Compiled, error) {
	c = c.Defaulted()
	out := &Compiled{
		cfg:              c,
		BypassAuth:       c.AccessControl.BypassAuth,
		TrustControllers: *c.AccessControl.TrustControllers,
		EnforceQueue:     c.EnforceQueueACLs,
		EnforceDelete:    c.EnforceDeleteACLs,
		ModifyACLKey:     c.ModifyACLAnnotation,
		Partition:        c.Partition,
	}
	var errs []error
	mode := func(setting, v string) bool {
		if v != "" && v != ModeDeny && v != ModeWarn {
			errs = append(errs, settingErr(setting, -1, "", "%q is not a mode: want %s or %s", v, ModeDeny, ModeWarn))
		}
		return v == ModeWarn
	}
	out.QueueWarn = mode("admissionController.enforceQueueACLsMode", c.EnforceQueueACLsMode)
	out.DeleteWarn = mode("admissionController.enforceDeleteACLsMode", c.EnforceDeleteACLsMode)
	oneOf := func(setting, v string, values ...string) string {
		if !slices.Contains(values, v) {
			errs = append(errs, settingErr(setting, -1, "", "%q: want %s", v, suggest.Or(values)))
		}
		return v
	}
	out.StampGiven = oneOf("admissionController.stampGroups", c.StampGroups, StampDecided, StampGiven) == StampGiven
	out.StampDeny = oneOf("admissionController.stampGroupsOnError", c.StampGroupsOnError, StampGiven, StampDeny) == StampDeny
	compile := func(dst *Matcher, setting string, ps Patterns) {
		res, err := compilePatterns(setting, ps)
		if err != nil {
			errs = append(errs, err)
		}
		*dst = res
	}
	compile(&out.SystemUsers, "admissionController.accessControl.systemUsers", c.AccessControl.SystemUsers)
	compile(&out.ExternalUsers, "admissionController.accessControl.externalUsers", c.AccessControl.ExternalUsers)
	compile(&out.ExternalGroups, "admissionController.accessControl.externalGroups", c.AccessControl.ExternalGroups)
	compile(&out.processNS, "admissionController.processNamespaces", c.ProcessNamespaces)
	compile(&out.bypassNS, "admissionController.bypassNamespaces", c.BypassNamespaces)

	if strings.TrimSpace(c.Partition) != c.Partition {
		errs = append(errs, settingErr("admissionController.partition", -1, "", "%q has leading or trailing blanks", c.Partition))
	}
	if c.ModifyACLAnnotation != strings.TrimSpace(c.ModifyACLAnnotation) || strings.ContainsAny(c.ModifyACLAnnotation, " \t\r\n") {
		errs = append(errs, settingErr("admissionController.modifyACLAnnotation", -1, "", "%q is not an annotation key", c.ModifyACLAnnotation))
	}
	if c.ModifyACLAnnotation == UserInfoAnnotation || c.ModifyACLAnnotation == DirectoryGroupsAnnotation {
		errs = append(errs, settingErr("admissionController.modifyACLAnnotation", -1, "", "%q is the user.info annotation or its companion %s", c.ModifyACLAnnotation, DirectoryGroupsAnnotation))
	}
	for i, s := range c.QueueSources {
		const setting = "admissionController.queueSources"
		cs := Source{QueueSource: s}
		cs.Annotation = s.Kind == "annotation"
		if s.Kind != "label" && !cs.Annotation {
			errs = append(errs, settingErr(setting, i, "kind", "%q is not a marker kind: want label or annotation", s.Kind))
		}
		if s.Level == "" && s.Scheduler == SchedulerYuniKorn {
			cs.Level = LevelPod
		}
		cs.Level = cmp.Or(cs.Level, LevelWorkload)
		cs.PodLevel = cs.Level == LevelPod
		if cs.Level != LevelPod && cs.Level != LevelWorkload {
			errs = append(errs, settingErr(setting, i, "level", "%q is not a level: want pod or workload", s.Level))
		}
		cs.Place = s.Scheduler == SchedulerYuniKorn
		if s.Key == "" || strings.TrimSpace(s.Key) != s.Key {
			errs = append(errs, settingErr(setting, i, "key", "%q is not a label or annotation key", s.Key))
		}
		if err := checkTemplate(s.Template); err != nil {
			errs = append(errs, settingErr(setting, i, "template", "%v", err))
		}
		for j := range i {
			if c.QueueSources[j].Kind == s.Kind && c.QueueSources[j].Key == s.Key {
				errs = append(errs, settingErr(setting, i, "", "%s %q is already source %d", s.Kind, s.Key, j))
			}
		}
		if cs.Annotation && (s.Key == UserInfoAnnotation || s.Key == DirectoryGroupsAnnotation || s.Key == c.ModifyACLAnnotation) {
			errs = append(errs, settingErr(setting, i, "key", "annotation %q holds user.info or the modify ACL, not a queue", s.Key))
		}
		out.Sources = append(out.Sources, cs)
	}
	if err := checkTemplate(c.QueueMapping.Template); err != nil {
		errs = append(errs, settingErr("admissionController.queueMapping.template", -1, "", "%v", err))
	}
	for i, e := range c.QueueMapping.Table {
		const setting = "admissionController.queueMapping.table"
		if e.Value == "" {
			errs = append(errs, settingErr(setting, i, "value", "required: the marker value this entry maps"))
		}
		if err := checkQueuePath(e.Queue); err != nil {
			errs = append(errs, settingErr(setting, i, "queue", "%v", err))
		}
	}
	d := oneOf("admissionController.delegatedAdministration", c.DelegatedAdministration, DelegationOff, DelegationWarn, DelegationEnforce)
	out.Delegated, out.DelegatedWarn = d != DelegationOff, d == DelegationWarn
	for j, names := range [][]string{c.TrustedSetters.Users, c.TrustedSetters.Groups} {
		for i, n := range names {
			if n == "" || strings.TrimSpace(n) != n {
				errs = append(errs, settingErr("admissionController.trustedSetters."+[]string{"users", "groups"}[j], i, "", "%q is not a name", n))
			}
		}
	}
	errs = append(errs, compileOperators(&c, out)...)
	if u := c.AccessControl.UnstampedParents; u != "" {
		out.UnstampedDeny = oneOf("admissionController.accessControl.unstampedParents", u, UnstampedPropagator, UnstampedDeny) == UnstampedDeny
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// MustCompile is Compile for configurations known to be valid.
func MustCompile(c Config) *Compiled {
	out, err := c.Compile()
	if err != nil {
		panic(err)
	}
	return out
}

// Config returns the configuration compiled, defaults filled in.
func (c *Compiled) Config() Config { return c.cfg }

// TrustedSetter reports whether user or one of groups is in system:masters
// or trustedSetters: delegatedAdministration lets it write anything.
func (c *Compiled) TrustedSetter(user string, groups []string) bool {
	t := c.cfg.TrustedSetters
	return slices.Contains(t.Users, user) || slices.ContainsFunc(groups, func(g string) bool { return g == "system:masters" || slices.Contains(t.Groups, g) })
}

// ProcessNamespace reports whether objects in ns are handled.
func (c *Compiled) ProcessNamespace(ns string) bool {
	return !c.bypassNS.Match(ns) && (len(c.processNS) == 0 || c.processNS.Match(ns))
}

// checkTemplate checks that each {…} of a queue-mapping template is a placeholder.
func checkTemplate(s string) error {
	for rest := s; ; {
		open := strings.IndexAny(rest, "{}")
		switch {
		case open < 0:
			return nil
		case rest[open] == '}':
			return fmt.Errorf("%q: unmatched }", s)
		}
		name, after, ok := strings.Cut(rest[open+1:], "}")
		switch {
		case !ok:
			return fmt.Errorf("%q: unterminated {", s)
		case name != "value" && name != "namespace" && name != "scheduler":
			return fmt.Errorf("%q: unknown placeholder {%s}: want {value}, {namespace} or {scheduler}", s, name)
		}
		rest = after
	}
}

// checkQueuePath checks that q is "root" or "root." followed by non-empty dot-separated names.
func checkQueuePath(q string) error {
	if q != "root" && !strings.HasPrefix(q, "root.") {
		return fmt.Errorf("%s is not a queue path: want root or root.<name>...", clip.Quote(q, 200))
	}
	for i, part := range strings.Split(q, ".") {
		if part == "" {
			return fmt.Errorf("%s is not a queue path: name %d is empty", clip.Quote(q, 200), i)
		}
		if strings.TrimSpace(part) != part {
			return fmt.Errorf("%s is not a queue path: name %s has blanks", clip.Quote(q, 200), clip.Quote(part, 200))
		}
	}
	return nil
}

// MapQueue maps a marker value read by source s in namespace ns to a
// queue path. While placing, a YuniKorn marker nothing maps is returned
// with place true: YuniKorn's shim passes it to the placement rules.
func (c *Compiled) MapQueue(s *Source, value, ns string, placing bool) (queue string, place bool, err error) {
	for i := range c.cfg.QueueMapping.Table {
		e := &c.cfg.QueueMapping.Table[i]
		if e.Value == value && (e.Scheduler == "" || e.Scheduler == s.Scheduler) && (e.Namespace == "" || e.Namespace == ns) {
			return e.Queue, false, nil
		}
	}
	var q string
	switch t := cmp.Or(s.Template, c.cfg.QueueMapping.Template); {
	case placing && s.Place && t == "":
		return value, true, nil
	case t != "":
		q = strings.NewReplacer("{value}", value, "{namespace}", ns, "{scheduler}", s.Scheduler).Replace(t)
	case value == "root" || strings.HasPrefix(value, "root."):
		q = value
	default:
		q = "root." + value
	}
	return q, false, checkQueuePath(q)
}

// SchedulerYuniKorn is the scheduler whose markers go through placement rules.
const SchedulerYuniKorn = "yunikorn"

// compilePatterns compiles ps; errors name the setting and the item.
func compilePatterns(setting string, ps Patterns) (Matcher, error) {
	out := make(Matcher, 0, len(ps))
	for i, p := range ps {
		re, err := regexp.Compile(p)
		if err != nil {
			msg := err.Error()
			if se, ok := errors.AsType[*syntax.Error](err); ok {
				msg = se.Code.String() + ": " + se.Expr
			}
			return nil, settingErr(setting, i, "", "invalid regular expression %q: %s", p, msg)
		}
		out = append(out, re)
	}
	return out, nil
}
