package config

import (
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/internal/yamlnode"
)

// Option configures Load, Parse and FromConfigMap.
type Option func(*options)

type options struct {
	lookup  func(string) (string, bool)
	strict  bool    // Strict
	request bool    // InRequest, served
	served  *Config // the configuration in service, or nil
}

func newOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithEnv applies the ADMISSION_CONTROLLER_* variables read with lookup
// over the file's admission settings (settings.Resolve); a bad value is
// an error at "environment: VARIABLE: …". Default: none are read.
func WithEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.lookup = lookup }
}

// Strict makes an error of what a later release refuses
// (Diagnostic.Upgrade, docs/upgrade.md). Default: a warning.
func Strict() Option { return func(o *options) { o.strict = true } }

// InRequest reads a configuration that arrived in a request (/validate-config)
// without opening any file: a users-to-groups file served (the configuration
// in service, or nil) reads is taken from it, any other a warning; implies Strict.
func InRequest(served *Config) Option {
	return func(o *options) { o.strict, o.request, o.served = true, true, served }
}

// EnvFile is the file name of diagnostics about ADMISSION_CONTROLLER_* variables.
const EnvFile = "environment"

// Load reads the configuration at path ("" is the embedded default) through
// the one pipeline; an invalid one is an *InvalidError listing every mistake.
func Load(path string, opts ...Option) (*Config, error) {
	if path == "" {
		return parse(&source{name: "<embedded default>", dir: ".", queues: defaultYAML}, opts)
	}
	f, err := Read(path, opts...)
	if err != nil {
		return nil, err
	}
	return LoadFiles(f, opts...)
}

// LoadFiles runs Load's pipeline on what Read read.
func LoadFiles(f *Files, opts ...Option) (*Config, error) {
	src, err := f.source()
	if err != nil {
		return nil, err
	}
	return parse(src, opts)
}

// Parse parses a usher YAML configuration held in memory, named name in
// diagnostics; relative paths are against the current directory.
func Parse(name string, data []byte, opts ...Option) (*Config, error) {
	return parse(&source{name: name, dir: ".", queues: data}, opts)
}

// FromConfigMap reads a YuniKorn-style ConfigMap's data: queues.yaml
// holds the partitions, flat admissionController.* keys (or a block in
// queues.yaml, not both) the admission settings.
func FromConfigMap(name string, data map[string]string, opts ...Option) (*Config, error) {
	keys := make(map[string]keyValue, len(data))
	for k, v := range data {
		keys[k] = keyValue{value: v, file: name, cm: name}
	}
	src, err := dataSource(name, ".", keys)
	if err != nil {
		return nil, err
	}
	if src.missing == "" {
		src.name = name + "/" + queuesKey(keys)
	}
	if src.usher != nil {
		src.usher.file = name + "/" + UsherKey
	}
	return parse(src, opts)
}

func parse(src *source, opts []Option) (*Config, error) {
	o := newOptions(opts)
	p := &parser{diags: diags{place: place{src.name, src.lineOff, src.colOff}}, o: o, src: src,
		queueNode: map[string]*yaml.Node{}, known: map[string]bool{},
		partNodes: map[string][2]*yaml.Node{}, reported: map[*yaml.Node]bool{}, digests: map[string][32]byte{}}
	if src.usher != nil {
		p.diags.usher = src.usher.placeOf(UsherKey)
	}
	for _, broke := range src.broke {
		p.upgrade(nil, "%v", broke)
	}
	c, adm := p.document(src.queues, src.doc)
	p.digests[""] = keysDigest(src.keys)
	// The admission settings are read even when the partitions have
	// errors, so that every mistake is reported at once.
	loc := p.admission(c, src, adm, o.lookup)
	if src.missing != "" {
		p.missingGroup(c, src)
	}
	p.lint(c) // with errors too: every problem at once
	if errs := p.of(Error); len(errs) > 0 {
		return nil, &InvalidError{Diagnostics: errs, Warnings: p.of(Warning)}
	}
	c.Warnings = p.of(Warning)
	p.webhookOnly(c, loc)
	return c, nil
}

// webhookOnly sets c.WebhookOnly, each where it is set.
func (p *parser) webhookOnly(c *Config, loc locator) {
	a, mark := c.Admission, len(p.list)
	if a == nil {
		return
	}
	for _, part := range c.Partitions {
		nodes := p.partNodes[strings.ToLower(part.Name)]
		if !strings.EqualFold(part.Name, a.Partition) {
			continue
		}
		if part.Groups != identity.ModeGiven && !a.StampGiven {
			p.errorf(nodes[0], "partition %s: groups %s: webhook only: the CREATE stamp with the directory's groups (stampGroups: decided); the floor guards the stamp only", part.Name, part.Groups)
		}
		if part.Placement != nil && (a.EnforceQueue || a.EnforceDelete) {
			p.errorf(nodes[1], "partition %s: placementrules: webhook only: placement of the queues the admission checks read", part.Name)
		}
	}
	for _, n := range []struct {
		on            bool
		setting, what string
	}{
		{a.EnforceQueue, "enforceQueueACLs", "the queue ACLs at admission (queueSources, queueMapping, directory groups)"},
		{len(a.Propagators) > 0, "accessControl.propagators", "the parent check: the floor lets propagators set user.info and leaves " +
			"what they create unstamped; only the webhook copies the parent's stamp and refuses another (docs/operators.md)"},
		{len(a.CustomKinds) > 0, "customResources", "custom resources are stamped and guarded by the webhook only"},
		{a.EnforceDelete, "enforceDeleteACLs", "the kill rule: DELETE, evictions, Bindings, adoptions and the modify ACL's delegation (" + a.ModifyACLKey + ")"},
	} {
		if n.on {
			loc.err(&settings.SettingError{Setting: "admissionController." + n.setting, Index: -1, Msg: "webhook only: " + n.what}, "")
		}
	}
	c.WebhookOnly = slices.Clone(p.list[mark:])
	for i := range c.WebhookOnly {
		c.WebhookOnly[i].Severity, c.WebhookOnly[i].Code = Note, "webhook-only"
	}
	p.list = p.list[:mark]
}

// admission reads the admission settings (block adm, or a ConfigMap's flat
// keys) and checks what they name, each problem where it was written.
func (p *parser) admission(c *Config, src *source, adm *yaml.Node, lookup func(string) (string, bool)) (loc locator) {
	var raw settings.Config
	loc = locator{p: p, block: adm}
	if adm != nil && !p.strict(adm, "admissionController", &raw) {
		return
	}
	flat := map[string]string{}
	for k, v := range src.keys {
		if strings.HasPrefix(k, "admissionController.") {
			flat[k] = v.value
		}
	}
	if len(flat) > 0 {
		if adm != nil {
			p.errorf(adm, "the admission controller is set both here and as admissionController.* keys of the ConfigMap (%s): use one",
				strings.Join(slices.Sorted(maps.Keys(flat)), ", "))
			return
		}
		loc.cm = src
		var err error
		if raw, err = settings.FromConfigMap(flat); err != nil {
			for _, ke := range settings.KeyErrors(err) {
				loc.at(ke.Name, Diagnostic{Severity: Error, Msg: ke.Error()}, -1, "")
			}
			return
		}
	}
	compiled, warnings, err := settings.Resolve(raw, lookup)
	for _, ke := range settings.KeyErrors(err) {
		p.push(Diagnostic{File: EnvFile, Severity: Error, Msg: ke.Error()})
	}
	for _, se := range settings.SettingErrors(err) {
		if se.Variable != "" {
			p.push(Diagnostic{File: EnvFile, Severity: Error, Msg: se.Error()})
		} else {
			loc.err(se, "")
		}
	}
	for _, w := range warnings {
		if x := settingWarning(w); w.Variable != "" {
			x.File = EnvFile
			p.push(x)
		} else {
			loc.warn(w)
		}
	}
	if err != nil {
		return
	}
	c.Admission = compiled
	if c.Snapshot != nil {
		loc.references(raw, c.Snapshot)
	}
	return loc
}

// locator places a problem of an admission setting where it is written:
// in the admissionController block, or at the flat key of the ConfigMap cm.
type locator struct {
	p     *parser
	block *yaml.Node
	cm    *source // nil: the settings are in block
}

// err reports se at its setting, list item and field, or at the setting at
// when not ""; a flat key is named by the key that sets it.
func (l locator) err(se *settings.SettingError, at string) {
	switch {
	case l.cm == nil && at != "":
		l.p.errorf(settingNode(l.block, at, -1, ""), "%s", se)
	case l.cm == nil:
		l.p.errorf(settingNode(l.block, se.Setting, se.Index, se.Field), "%s", se)
	case at != "":
		l.at(l.keyOf(at), Diagnostic{Severity: Error, Msg: se.Error()}, -1, "")
	default:
		e := *se
		e.Setting = l.keyOf(se.Setting)
		l.at(e.Setting, Diagnostic{Severity: Error, Msg: e.Error()}, se.Index, "")
	}
}

// keyOf is the ConfigMap key of a setting: the setting itself, or
// YuniKorn's filtering.* spelling when that is the one set.
func (l locator) keyOf(setting string) string {
	if alias := settings.Alias(setting); alias != "" {
		if _, set := l.cm.keys[alias]; set {
			return alias
		}
	}
	return setting
}

// at reports x at the flat key key, a pattern at its place in the value.
func (l locator) at(key string, x Diagnostic, index int, pattern string) {
	kv, ok := l.cm.keys[key]
	switch {
	case !ok:
		// A default or an unset key: the ConfigMap as a whole.
		x.File = l.cm.origin
	case kv.node == nil:
		x.File = kv.file
	default:
		x.File, x.Line, x.Col = kv.file, kv.node.Line, kv.node.Column
		if pattern != "" && kv.node.Kind == yaml.ScalarNode {
			if off, ok := patternOffset(kv.node.Value, index); ok {
				x.Line, x.Col = offsetPos(kv.node, off)
			}
		}
	}
	l.p.push(x)
}

// settingNode finds the node of an admission setting, its list item and
// field, in the admissionController block, else the deepest node found.
func settingNode(block *yaml.Node, setting string, index int, field string) *yaml.Node {
	n := block
	for _, name := range strings.Split(strings.TrimPrefix(setting, "admissionController."), ".") {
		next := yamlnode.Value(n, name)
		if next == nil {
			return n
		}
		n = next
	}
	if index < 0 || n.Kind != yaml.SequenceNode || index >= len(n.Content) {
		return n // no item, a comma-separated pattern string, or a list too short
	}
	n = n.Content[index]
	if field != "" && n.Kind == yaml.MappingNode {
		if v := yamlnode.Value(n, field); v != nil {
			return v
		}
	}
	return n
}

// settingWarning is the diagnostic of w, placed by its locator.
func settingWarning(w settings.Warning) Diagnostic {
	return Diagnostic{Severity: Warning, Code: "admission-setting", Msg: w.String(), Suggestion: w.Fix}
}

// warn reports w at the pattern it is about: the item of a list, or the
// pattern's place in a comma-separated string.
func (l locator) warn(w settings.Warning) {
	if l.cm != nil {
		w.Setting = l.keyOf(w.Setting)
		l.at(w.Setting, settingWarning(w), w.Index, w.Pattern)
		return
	}
	n := settingNode(l.block, w.Setting, -1, "")
	switch {
	case n == nil || w.Pattern == "":
	case n.Kind == yaml.SequenceNode:
		items := 0
		for _, item := range n.Content {
			if item.Kind == yaml.ScalarNode && strings.TrimSpace(item.Value) == "" {
				continue // dropped as blank, as Patterns does
			}
			if items == w.Index {
				n = item
				break
			}
			items++
		}
	case n.Kind == yaml.ScalarNode:
		if off, ok := patternOffset(n.Value, w.Index); ok {
			x := settingWarning(w)
			x.File, x.Line, x.Col = l.p.pos(offsetPos(n, off))
			l.p.push(x)
			return
		}
	}
	l.p.report(n, settingWarning(w))
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
