package admission

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Compiled is a validated Config with its regular expressions compiled and
// its queue mapping prepared, ready for the handler. It is immutable and
// safe for concurrent use; a reload compiles a new one and swaps it in
// with the rest of the configuration (see WithState).
type Compiled struct {
	cfg Config

	bypassAuth, trustControllers, enforce bool
	enforceDelete                         bool
	// queueWarn, deleteWarn: enforceQueueACLsMode, enforceDeleteACLsMode
	// are warn.
	queueWarn, deleteWarn bool
	// stampGiven: stampGroups is given; stampDeny: stampGroupsOnError is
	// deny.
	stampGiven, stampDeny      bool
	modifyACLKey               string
	systemUsers, externalUsers matcher
	externalGroups             matcher
	processNS, bypassNS        matcher

	sources   []compiledSource
	table     []QueueMappingEntry
	template  *template
	partition string

	// Keys the object scanner looks for, with their slots.
	labelKeys, annotationKeys []wantKey
}

type compiledSource struct {
	QueueSource
	annotation bool
	podLevel   bool      // the scheduler reads the marker on the pods only
	place      bool      // YuniKorn's placement rules decide the queue (SubmitRequest.Place)
	template   *template // nil: use the global template or the default rule
}

type matcher []*regexp.Regexp

func (m matcher) match(s string) bool {
	for _, re := range m {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

func (m matcher) matchAny(ss []string) bool {
	if len(m) == 0 {
		return false
	}
	for _, s := range ss {
		if m.match(s) {
			return true
		}
	}
	return false
}

// SettingError is a setting of Config that cannot be used, named by its
// place so that a reader of the configuration can point at it: Setting is
// the dotted YAML path (admissionController.queueSources), Index the list
// item (-1 for none) and Field the key inside that item ("" for the item
// or setting itself). Compile returns them joined (errors.Join); match
// each with errors.As.
type SettingError struct {
	Setting string
	Index   int
	Field   string
	Msg     string
}

// Path renders the place: admissionController.queueSources[1].key.
func (e *SettingError) Path() string {
	var b strings.Builder
	b.WriteString(e.Setting)
	if e.Index >= 0 {
		fmt.Fprintf(&b, "[%d]", e.Index)
	}
	if e.Field != "" {
		b.WriteString(".")
		b.WriteString(e.Field)
	}
	return b.String()
}

func (e *SettingError) Error() string { return e.Path() + ": " + e.Msg }

func settingErr(setting string, index int, field, format string, args ...any) *SettingError {
	return &SettingError{Setting: setting, Index: index, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// SettingErrors returns the SettingErrors in err (one, or several joined
// with errors.Join), in order.
func SettingErrors(err error) []*SettingError { return joined[*SettingError](err) }

// joined returns the errors of type E in err, walking errors.Join's
// lists depth first so that they come out in the order they were joined.
func joined[E error](err error) []E {
	var out []E
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var e E
		if errors.As(err, &e) {
			out = append(out, e)
		}
	}
	if err != nil {
		walk(err)
	}
	return out
}

// Compile validates c (after defaults) and prepares it for the handler. An
// error names the setting at fault: an invalid regular expression, an
// unknown queue source kind, an empty key, a bad template or mapping entry.
// All problems are reported, joined; each is a *SettingError.
func (c Config) Compile() (*Compiled, error) {
	c = c.Defaulted()
	out := &Compiled{
		cfg:              c,
		bypassAuth:       c.AccessControl.BypassAuth,
		trustControllers: *c.AccessControl.TrustControllers,
		enforce:          c.EnforceQueueACLs,
		enforceDelete:    c.EnforceDeleteACLs,
		modifyACLKey:     c.ModifyACLAnnotation,
		partition:        c.Partition,
	}
	var errs []error
	mode := func(setting, v string) bool {
		switch v {
		case "", ModeDeny:
			return false
		case ModeWarn:
			return true
		}
		errs = append(errs, settingErr(setting, -1, "", "%q is not a mode: want %s or %s", v, ModeDeny, ModeWarn))
		return false
	}
	out.queueWarn = mode("admissionController.enforceQueueACLsMode", c.EnforceQueueACLsMode)
	out.deleteWarn = mode("admissionController.enforceDeleteACLsMode", c.EnforceDeleteACLsMode)
	oneOf := func(setting, v, yes, no string) bool {
		if v != yes && v != no {
			errs = append(errs, settingErr(setting, -1, "", "%q: want %s or %s", v, no, yes))
		}
		return v == yes
	}
	out.stampGiven = oneOf("admissionController.stampGroups", c.StampGroups, StampGiven, StampDecided)
	out.stampDeny = oneOf("admissionController.stampGroupsOnError", c.StampGroupsOnError, StampDeny, StampGiven)
	compile := func(dst *matcher, setting string, ps Patterns) {
		res, err := compilePatterns(setting, ps)
		if err != nil {
			errs = append(errs, err)
		}
		*dst = res
	}
	compile(&out.systemUsers, "admissionController.accessControl.systemUsers", c.AccessControl.SystemUsers)
	compile(&out.externalUsers, "admissionController.accessControl.externalUsers", c.AccessControl.ExternalUsers)
	compile(&out.externalGroups, "admissionController.accessControl.externalGroups", c.AccessControl.ExternalGroups)
	compile(&out.processNS, "admissionController.processNamespaces", c.ProcessNamespaces)
	compile(&out.bypassNS, "admissionController.bypassNamespaces", c.BypassNamespaces)

	if strings.TrimSpace(c.Partition) != c.Partition {
		errs = append(errs, settingErr("admissionController.partition", -1, "", "%q has leading or trailing blanks", c.Partition))
	}
	if len(c.QueueSources) > maxSources {
		errs = append(errs, settingErr("admissionController.queueSources", -1, "", "%d sources, at most %d are supported",
			len(c.QueueSources), maxSources))
	}
	out.annotationKeys = append(out.annotationKeys, wantKey{UserInfoAnnotation, slotUserInfo}, wantKey{DirectoryGroupsAnnotation, slotDirGroups})
	out.labelKeys = append(out.labelKeys, wantKey{LegacyUserLabel, slotLegacy})
	if c.ModifyACLAnnotation != strings.TrimSpace(c.ModifyACLAnnotation) || strings.ContainsAny(c.ModifyACLAnnotation, " \t\r\n") {
		errs = append(errs, settingErr("admissionController.modifyACLAnnotation", -1, "", "%q is not an annotation key", c.ModifyACLAnnotation))
	}
	if c.ModifyACLAnnotation == UserInfoAnnotation || c.ModifyACLAnnotation == DirectoryGroupsAnnotation {
		errs = append(errs, settingErr("admissionController.modifyACLAnnotation", -1, "", "%q is the user.info annotation or its companion %s", c.ModifyACLAnnotation, DirectoryGroupsAnnotation))
	}
	if c.EnforceDeleteACLs {
		out.annotationKeys = append(out.annotationKeys, wantKey{c.ModifyACLAnnotation, slotModifyACL})
	}
	for i, s := range c.QueueSources {
		if i >= maxSources {
			break
		}
		const setting = "admissionController.queueSources"
		cs := compiledSource{QueueSource: s}
		switch s.Kind {
		case "label":
		case "annotation":
			cs.annotation = true
		default:
			errs = append(errs, settingErr(setting, i, "kind", "%q is not a marker kind: want label or annotation", s.Kind))
		}
		switch s.Level {
		case LevelPod:
			cs.podLevel = true
		case LevelWorkload:
		case "":
			cs.podLevel = s.Scheduler == schedulerYuniKorn
			if cs.podLevel {
				cs.Level = LevelPod
			} else {
				cs.Level = LevelWorkload
			}
		default:
			errs = append(errs, settingErr(setting, i, "level", "%q is not a level: want pod or workload", s.Level))
		}
		cs.place = s.Scheduler == schedulerYuniKorn
		if s.Key == "" || strings.TrimSpace(s.Key) != s.Key {
			errs = append(errs, settingErr(setting, i, "key", "%q is not a label or annotation key", s.Key))
		}
		if s.Template != "" {
			t, err := parseTemplate(s.Template)
			if err != nil {
				errs = append(errs, settingErr(setting, i, "template", "%v", err))
			}
			cs.template = t
		}
		for j := range i {
			if c.QueueSources[j].Kind == s.Kind && c.QueueSources[j].Key == s.Key {
				errs = append(errs, settingErr(setting, i, "", "%s %q is already source %d", s.Kind, s.Key, j))
			}
		}
		if cs.annotation && (s.Key == UserInfoAnnotation || s.Key == DirectoryGroupsAnnotation || s.Key == c.ModifyACLAnnotation) {
			errs = append(errs, settingErr(setting, i, "key", "annotation %q holds user.info or the modify ACL, not a queue", s.Key))
		}
		out.sources = append(out.sources, cs)
		// The markers are read for the queue check and, when deletes are
		// checked, to find the queue whose admins may delete.
		if c.EnforceQueueACLs || c.EnforceDeleteACLs {
			k := wantKey{s.Key, slotMarkers + i}
			if cs.annotation {
				out.annotationKeys = append(out.annotationKeys, k)
			} else {
				out.labelKeys = append(out.labelKeys, k)
			}
		}
	}
	if c.QueueMapping.Template != "" {
		t, err := parseTemplate(c.QueueMapping.Template)
		if err != nil {
			errs = append(errs, settingErr("admissionController.queueMapping.template", -1, "", "%v", err))
		}
		out.template = t
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
	out.table = c.QueueMapping.Table
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// MustCompile is Compile for configurations known to be valid (defaults,
// tests); it panics on error.
func MustCompile(c Config) *Compiled {
	out, err := c.Compile()
	if err != nil {
		panic(err)
	}
	return out
}

// Config returns the configuration this was compiled from, with defaults
// filled in.
func (c *Compiled) Config() Config { return c.cfg }

// processNamespace reports whether objects in ns are handled.
func (c *Compiled) processNamespace(ns string) bool {
	if c.bypassNS.match(ns) {
		return false
	}
	return len(c.processNS) == 0 || c.processNS.match(ns)
}

// template is a parsed queue-mapping template: literal text with
// {value}, {namespace} and {scheduler} placeholders.
type template struct {
	parts []templatePart
}

type templatePart struct {
	lit string
	ph  placeholder
}

type placeholder uint8

const (
	phNone placeholder = iota
	phValue
	phNamespace
	phScheduler
)

func parseTemplate(s string) (*template, error) {
	t := &template{}
	rest := s
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			t.parts = append(t.parts, templatePart{lit: rest})
			break
		}
		if rest[open] == '}' {
			return nil, fmt.Errorf("%q: unmatched }", s)
		}
		if open > 0 {
			t.parts = append(t.parts, templatePart{lit: rest[:open]})
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("%q: unterminated {", s)
		}
		name := rest[open+1 : open+end]
		switch name {
		case "value":
			t.parts = append(t.parts, templatePart{ph: phValue})
		case "namespace":
			t.parts = append(t.parts, templatePart{ph: phNamespace})
		case "scheduler":
			t.parts = append(t.parts, templatePart{ph: phScheduler})
		default:
			return nil, fmt.Errorf("%q: unknown placeholder {%s}: want {value}, {namespace} or {scheduler}", s, name)
		}
		rest = rest[open+end+1:]
	}
	return t, nil
}

func (t *template) expand(value, namespace, scheduler string) string {
	var b strings.Builder
	for _, p := range t.parts {
		switch p.ph {
		case phValue:
			b.WriteString(value)
		case phNamespace:
			b.WriteString(namespace)
		case phScheduler:
			b.WriteString(scheduler)
		default:
			b.WriteString(p.lit)
		}
	}
	return b.String()
}

// checkQueuePath checks that q is "root" or "root." followed by non-empty
// dot-separated names.
func checkQueuePath(q string) error {
	if q != "root" && !strings.HasPrefix(q, "root.") {
		return fmt.Errorf("%s is not a queue path: want root or root.<name>...", errString(q))
	}
	for i, part := range strings.Split(q, ".") {
		if part == "" {
			return fmt.Errorf("%s is not a queue path: name %d is empty", errString(q), i)
		}
		if strings.TrimSpace(part) != part {
			return fmt.Errorf("%s is not a queue path: name %s has blanks", errString(q), errString(part))
		}
	}
	return nil
}

// mapQueue maps a marker value read by source s on an object in namespace
// ns to a queue path.
//
// A marker of YuniKorn (place true) that no table entry and no template
// maps is not mapped: YuniKorn's shim passes the value to the scheduler
// unchanged and its placement rules decide the queue; the value is
// returned as it is, the provided rule's input.
//
// With placing false (the delete check, which asks about the queue a
// workload is in) every marker is mapped.
func (c *Compiled) mapQueue(s *compiledSource, value, ns string, placing bool) (queue string, place bool, err error) {
	for i := range c.table {
		e := &c.table[i]
		if e.Value == value && (e.Scheduler == "" || e.Scheduler == s.Scheduler) && (e.Namespace == "" || e.Namespace == ns) {
			return e.Queue, false, nil
		}
	}
	var q string
	switch {
	case placing && s.place && s.template == nil && c.template == nil:
		// YuniKorn's marker without an explicit mapping: the placement
		// rules decide (SubmitRequest.Place), from the value unchanged.
		return value, true, nil
	case s.template != nil:
		q = s.template.expand(value, ns, s.Scheduler)
	case c.template != nil:
		q = c.template.expand(value, ns, s.Scheduler)
	case value == "root" || strings.HasPrefix(value, "root."):
		q = value
	default:
		q = "root." + value
	}
	return q, false, checkQueuePath(q)
}

// schedulerYuniKorn is the scheduler whose markers go through its
// placement rules (QueueSource.Scheduler).
const schedulerYuniKorn = "yunikorn"
