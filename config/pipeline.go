package config

import (
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/admission/settings"
)

// Option configures Load, Parse and FromConfigMap.
type Option func(*options)

type options struct {
	lookup func(string) (string, bool)
	// strict makes what a later release refuses an error (Strict).
	strict bool
	// request: the configuration arrived in a request (InRequest), and
	// served is the configuration in service, or nil.
	request bool
	served  *Config
}

func newOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithEnv applies the ADMISSION_CONTROLLER_* variables read with lookup
// (os.LookupEnv in every command and in usher serve), which override the
// file's admission settings (see settings.Resolve). A bad value
// is an error at "environment: VARIABLE: …"; a setting a variable
// overrides is linted as the variable, and warnings about the file's value
// are dropped, since that value is not in force. Default: no variables are
// read.
func WithEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.lookup = lookup }
}

// Strict makes an error of what this release still loads with a warning
// (Diagnostic.Upgrade) and a later one refuses (docs/upgrade.md), for
// usher lint and policy tests. Default: a warning.
func Strict() Option { return func(o *options) { o.strict = true } }

// InRequest reads a configuration that arrived in a request (usher's
// /validate-config) without opening any file on usher's filesystem: a
// users-to-groups file that served (the configuration in service; may be
// nil) reads is taken from it, any other is reported as not checked (a
// warning), unread. It implies Strict.
func InRequest(served *Config) Option {
	return func(o *options) { o.strict, o.request, o.served = true, true, served }
}

// EnvFile is the file name diagnostics about ADMISSION_CONTROLLER_*
// variables carry.
const EnvFile = "environment"

// Load reads a configuration from path through the one pipeline every
// command and usher serve use: the source (a usher YAML file, a ConfigMap
// manifest, the directory where a ConfigMap is mounted, or "" for the
// embedded default) → parse with positions → environment overrides
// (WithEnv) → validate and lint → compile. The error, when the
// configuration is invalid, is an *InvalidError listing every mistake at
// FILE:LINE:COL; a source that cannot be read is another error.
func Load(path string, opts ...Option) (*Config, error) {
	if path == "" {
		return parse(&source{name: "<embedded default>", dir: ".", queues: defaultYAML}, opts)
	}
	o := newOptions(opts)
	src, err := readSource(path, o)
	if err != nil {
		return nil, err
	}
	return parse(src, opts)
}

// Parse parses a usher YAML configuration held in memory; name is used in
// diagnostics. Relative file paths inside it are relative to the current
// directory. The error, when not nil, is an *InvalidError listing every
// mistake.
func Parse(name string, data []byte, opts ...Option) (*Config, error) {
	return parse(&source{name: name, dir: ".", queues: data}, opts)
}

// FromConfigMap reads a YuniKorn-style ConfigMap's data: the queues.yaml key
// holds the partitions (and may hold an admissionController block), and
// flat admissionController.* keys hold the admission settings. Setting the
// admission controller both ways is an error, so that no setting is
// silently ignored. name is used in diagnostics.
func FromConfigMap(name string, data map[string]string, opts ...Option) (*Config, error) {
	src, err := configMapSource(name, data)
	if err != nil {
		return nil, err
	}
	return parse(src, opts)
}

// parse runs the pipeline on src.
func parse(src *source, opts []Option) (*Config, error) {
	o := newOptions(opts)
	p := &parser{diags: diags{place: place{src.name, src.lineOff, src.colOff}}, dir: src.dir, o: o, src: src}
	if src.usher != nil {
		p.diags.usher = src.usher.placeOf(UsherKey)
	}
	for _, broke := range src.broke {
		p.upgrade(nil, "%v", broke)
	}
	c, adm := p.document(src.queues, src.doc)
	// The admission settings are read even when the partitions have
	// errors, so that every mistake is reported at once.
	p.admission(c, src, adm, o.lookup)
	if src.missing != "" {
		p.missingGroup(c, src)
	}
	if errs := p.errors(); len(errs) > 0 {
		return nil, &InvalidError{Diagnostics: errs, Warnings: p.warnings()}
	}
	p.lint(c)
	c.Warnings = p.warnings()
	return c, nil
}

// admission reads the admission settings (the YAML block adm, or a
// ConfigMap's flat keys), applies the environment and compiles them once
// (settings.Resolve), and checks what they name in the partitions. Every
// problem is reported at the place it was written: a YAML node, a
// ConfigMap key, or a variable.
func (p *parser) admission(c *Config, src *source, adm *yaml.Node, lookup func(string) (string, bool)) {
	var raw settings.Config
	var loc locator = yamlLocator{p: p, block: adm}
	if adm != nil {
		if !p.strict(adm, "admissionController", &raw) {
			return
		}
	}
	if flat, ok := src.flat(); ok {
		if adm != nil {
			p.errorf(adm, "the admission controller is set both here and as admissionController.* keys of the ConfigMap (%s): use one",
				strings.Join(sortedKeys(flat), ", "))
			return
		}
		cl := configMapLocator{p: p, src: src}
		loc = cl
		var err error
		if raw, err = settings.FromConfigMap(flat); err != nil {
			for _, ke := range settings.KeyErrors(err) {
				cl.at(ke.Name, Error, ke.Error(), -1, "")
			}
			return
		}
	}
	compiled, warnings, err := settings.Resolve(raw, lookup)
	for _, ke := range settings.KeyErrors(err) {
		p.push(Diagnostic{File: EnvFile, Severity: Error, Msg: ke.Error()})
	}
	for _, se := range settings.SettingErrors(err) {
		p.admissionError(loc, se)
	}
	if err != nil {
		return
	}
	c.Admission = compiled
	for _, w := range warnings {
		if w.Variable != "" {
			p.push(Diagnostic{File: EnvFile, Severity: Warning, Msg: w.String()})
		} else {
			loc.warn(w)
		}
	}
	if c.Snapshot == nil {
		return
	}
	for _, r := range references(raw, c.Snapshot) {
		loc.err(&r.SettingError, r.at)
	}
}

// admissionError reports se where its setting was written: at the
// variable that gave it, or in the file or ConfigMap.
func (p *parser) admissionError(loc locator, se *settings.SettingError) {
	if se.Variable != "" {
		p.push(Diagnostic{File: EnvFile, Severity: Error, Msg: se.Error()})
		return
	}
	loc.err(se, "")
}

// locator reports a problem of an admission setting where it was
// written.
type locator interface {
	// err reports se at its setting, list item and field, or at the
	// setting at when not "".
	err(se *settings.SettingError, at string)
	warn(w settings.Warning)
}

// yamlLocator places settings in the admissionController block.
type yamlLocator struct {
	p     *parser
	block *yaml.Node
}

func (l yamlLocator) err(se *settings.SettingError, at string) {
	n := settingNode(l.block, se.Setting, se.Index, se.Field)
	if at != "" {
		n = settingNode(l.block, at, -1, "")
	}
	l.p.errorf(n, "%s", se)
}

func (l yamlLocator) warn(w settings.Warning) { l.p.admissionWarning(l.block, w) }

// configMapLocator places settings at the flat ConfigMap key that sets
// them.
type configMapLocator struct {
	p   *parser
	src *source
}

// keyOf is the ConfigMap key of a setting: the setting itself, or
// YuniKorn's filtering.* spelling when that is the one set.
func (l configMapLocator) keyOf(setting string) string {
	if alias := settings.Alias(setting); alias != "" {
		if _, set := l.src.keys[alias]; set {
			return alias
		}
	}
	return setting
}

func (l configMapLocator) at(key string, sev Severity, msg string, index int, pattern string) {
	kv, ok := l.src.keys[key]
	switch {
	case !ok:
		// A default or an unset key: the ConfigMap as a whole.
		l.p.push(Diagnostic{File: l.src.origin, Severity: sev, Msg: msg})
	case kv.node == nil:
		l.p.push(Diagnostic{File: kv.file, Severity: sev, Msg: msg})
	default:
		line, col := kv.node.Line, kv.node.Column
		if pattern != "" && kv.node.Kind == yaml.ScalarNode {
			if off, ok := patternOffset(kv.node.Value, index); ok {
				line, col = offsetPos(kv.node, off)
			}
		}
		l.p.push(Diagnostic{File: kv.file, Line: line, Col: col, Severity: sev, Msg: msg})
	}
}

// err names the setting by the key that sets it.
func (l configMapLocator) err(se *settings.SettingError, at string) {
	if at != "" {
		l.at(l.keyOf(at), Error, se.Error(), -1, "")
		return
	}
	e := *se
	e.Setting = l.keyOf(se.Setting)
	l.at(e.Setting, Error, e.Error(), se.Index, "")
}

func (l configMapLocator) warn(w settings.Warning) {
	w.Setting = l.keyOf(w.Setting)
	l.at(w.Setting, Warning, w.String(), w.Index, w.Pattern)
}

// settingNode finds the node of an admission setting (a YAML path such as
// admissionController.queueMapping.table, with a list index and a field
// inside the item) in the admissionController block, falling back to the
// deepest node found.
func settingNode(block *yaml.Node, setting string, index int, field string) *yaml.Node {
	n := block
	for _, name := range strings.Split(strings.TrimPrefix(setting, "admissionController."), ".") {
		if n == nil || n.Kind != yaml.MappingNode {
			return n
		}
		next := mapValue(n, name)
		if next == nil {
			return n
		}
		n = next
	}
	if index < 0 {
		return n
	}
	if n.Kind != yaml.SequenceNode || index >= len(n.Content) {
		return n // a comma-separated pattern string, or a list too short
	}
	n = n.Content[index]
	if field != "" && n.Kind == yaml.MappingNode {
		if v := mapValue(n, field); v != nil {
			return v
		}
	}
	return n
}

// admissionWarning reports w at the pattern it is about: the item of a
// list, or the pattern's place in a comma-separated string.
func (p *parser) admissionWarning(adm *yaml.Node, w settings.Warning) {
	n := settingNode(adm, w.Setting, -1, "")
	switch {
	case n == nil || w.Pattern == "":
	case n.Kind == yaml.SequenceNode:
		items := 0
		for _, item := range n.Content {
			if item.Kind == yaml.ScalarNode && strings.TrimSpace(item.Value) == "" {
				continue // dropped as blank, as Patterns does
			}
			if items == w.Index {
				p.warnf(item, "%s", w)
				return
			}
			items++
		}
	case n.Kind == yaml.ScalarNode:
		if off, ok := patternOffset(n.Value, w.Index); ok {
			p.atOffset(n, off, Warning, w.String())
			return
		}
	}
	p.warnf(n, "%s", w)
}

// patternOffset is the byte offset in s of the index-th pattern of the
// comma-separated list s, counted as settings.ParsePatterns counts them.
func patternOffset(s string, index int) (int, bool) {
	off, items := 0, 0
	for part := range strings.SplitSeq(s, ",") {
		if t := strings.TrimSpace(part); t != "" {
			if items == index {
				return off + strings.Index(part, t), true
			}
			items++
		}
		off += len(part) + 1
	}
	return 0, false
}

// absPath makes a path inside the configuration absolute against dir.
func absPath(dir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}
