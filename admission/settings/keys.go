package settings

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/sets"
)

// key is one setting as every source names it: its YAML path (also its
// ConfigMap key), YuniKorn's other ConfigMap key and its variables.
type key struct {
	setting string
	alias   string   // YuniKorn's ConfigMap key, when it differs
	env     []string // YuniKorn's variables (and the design page's for trustControllers); two set must agree
	// field points into a Config; want is the YAML form of a value set() parses as YAML.
	field func(*Config) any
	want  string
	lint  *patternKey // the anchoring rule of a pattern setting
	def   Patterns    // a pattern setting's default when unset
}

const prefix = "admissionController."

var keys = []key{
	{setting: prefix + "accessControl.bypassAuth", env: []string{"ADMISSION_CONTROLLER_BYPASS_AUTH"},
		field: func(c *Config) any { return &c.AccessControl.BypassAuth }},
	{setting: prefix + "accessControl.trustControllers", env: []string{"ADMISSION_CONTROLLER_TRUST_CONTROLLERS",
		"ADMISSION_CONTROLLER_BYPASS_CONTROLLERS"}, field: func(c *Config) any { return &c.AccessControl.TrustControllers }},
	{setting: prefix + "accessControl.systemUsers", env: []string{"ADMISSION_CONTROLLER_SYSTEM_USERS"},
		lint: &patternKey{"user", "trusts", ":"}, def: defaultSystemUsers,
		field: func(c *Config) any { return &c.AccessControl.SystemUsers }},
	{setting: prefix + "accessControl.externalUsers", env: []string{"ADMISSION_CONTROLLER_EXTERNAL_USERS"},
		lint: &patternKey{"user", "trusts", ":"}, field: func(c *Config) any { return &c.AccessControl.ExternalUsers }},
	{setting: prefix + "accessControl.externalGroups", env: []string{"ADMISSION_CONTROLLER_EXTERNAL_GROUPS"},
		lint: &patternKey{"group", "trusts", ":"}, field: func(c *Config) any { return &c.AccessControl.ExternalGroups }},
	{setting: prefix + "processNamespaces", alias: prefix + "filtering.processNamespaces", lint: &patternKey{"namespace", "matches", "-"},
		field: func(c *Config) any { return &c.ProcessNamespaces }},
	{setting: prefix + "bypassNamespaces", alias: prefix + "filtering.bypassNamespaces", lint: &patternKey{"namespace", "matches", ""},
		def: defaultBypassNamespaces, field: func(c *Config) any { return &c.BypassNamespaces }},
	{setting: prefix + "enforceQueueACLs", field: func(c *Config) any { return &c.EnforceQueueACLs }},
	{setting: prefix + "enforceQueueACLsMode", field: func(c *Config) any { return &c.EnforceQueueACLsMode }},
	{setting: prefix + "queueSources", want: "a YAML list of {kind, key, scheduler, template, level}",
		field: func(c *Config) any { return &c.QueueSources }},
	{setting: prefix + "queueMapping", want: "a YAML mapping with template and table",
		field: func(c *Config) any { return &c.QueueMapping }},
	{setting: prefix + "partition", field: func(c *Config) any { return &c.Partition }},
	{setting: prefix + "enforceDeleteACLs", field: func(c *Config) any { return &c.EnforceDeleteACLs }},
	{setting: prefix + "enforceDeleteACLsMode", field: func(c *Config) any { return &c.EnforceDeleteACLsMode }},
	{setting: prefix + "modifyACLAnnotation", field: func(c *Config) any { return &c.ModifyACLAnnotation }},
	{setting: prefix + "stampGroups", field: func(c *Config) any { return &c.StampGroups }},
	{setting: prefix + "stampGroupsOnError", field: func(c *Config) any { return &c.StampGroupsOnError }},
	{setting: prefix + "customResources", want: "a YAML list of {group, version, kind, resource, templates}",
		field: func(c *Config) any { return &c.CustomResources }},
	{setting: prefix + "accessControl.propagators", want: "a YAML list of {users, parents, podParents}",
		field: func(c *Config) any { return &c.AccessControl.Propagators }},
	{setting: prefix + "accessControl.unstampedParents", field: func(c *Config) any { return &c.AccessControl.UnstampedParents }},
	{setting: prefix + "delegatedAdministration", field: func(c *Config) any { return &c.DelegatedAdministration }},
	{setting: prefix + "trustedSetters", want: "a YAML mapping with users and groups",
		field: func(c *Config) any { return &c.TrustedSetters }},
}

// set parses v, the value of name (a ConfigMap key or a variable), into c.
func (k *key) set(c *Config, name, v string) (err error) {
	switch p := k.field(c).(type) {
	case *bool:
		*p, err = parseBool(name, v)
	case **bool:
		*p = new(bool)
		**p, err = parseBool(name, v)
	case *Patterns:
		*p = ParsePatterns(v)
	case *string:
		*p = strings.TrimSpace(v)
	default:
		if err := yaml.Unmarshal([]byte(v), p); err != nil {
			return &KeyError{Name: name, Msg: fmt.Sprintf("want %s: %v", k.want, err)}
		}
		if s, ok := p.(*[]QueueSource); ok && *s == nil {
			*s = []QueueSource{}
		}
	}
	return err
}

func parseBool(name, v string) (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, &KeyError{Name: name, Msg: fmt.Sprintf("invalid boolean %q: want true or false", v)}
	}
	return b, nil
}

// KeyError is a ConfigMap key or a variable whose value cannot be used.
type KeyError struct {
	Name string
	Msg  string
}

func (e *KeyError) Error() string { return e.Name + ": " + e.Msg }

// KeyErrors returns the KeyErrors in err, in order.
func KeyErrors(err error) []*KeyError { return joined[*KeyError](err) }

// ignoredConfigMapKeys are YuniKorn's keys for features usher does not
// have, ignored so that yunikorn-configs reads as it is.
var ignoredConfigMapKeys = sets.New(prefix+"webHook.amServiceName", prefix+"webHook.schedulerServiceAddress",
	prefix+"filtering.labelNamespaces", prefix+"filtering.noLabelNamespaces", prefix+"filtering.generateUniqueAppId",
	prefix+"filtering.defaultQueue")

// FromConfigMap reads the flat admissionController.* keys of a
// YuniKorn-style ConfigMap (YuniKorn's filtering.* names too, one name of
// each). Other keys are ignored; an unknown admissionController.* key is
// an error, so no typo is silently dropped.
func FromConfigMap(data map[string]string) (Config, error) {
	var c Config
	var errs []error
	for name, v := range data {
		if !strings.HasPrefix(name, prefix) || ignoredConfigMapKeys.Has(name) {
			continue
		}
		i := slices.IndexFunc(keys, func(k key) bool { return k.setting == name || k.alias == name })
		if i < 0 {
			errs = append(errs, &KeyError{Name: name, Msg: "unknown admission controller setting"})
			continue
		}
		k := &keys[i]
		if _, dup := data[k.alias]; dup && name == k.setting {
			errs = append(errs, &KeyError{Name: name, Msg: k.alias + " is the same setting: set only one"})
			continue
		}
		if err := k.set(&c, name, v); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
		return Config{}, errors.Join(errs...)
	}
	return c, nil
}

// Resolve applies the ADMISSION_CONTROLLER_* variables read with lookup
// (nil reads none) to c, even when empty, and compiles it. A bad variable
// is a *KeyError; errors and warnings name the variable that set a setting.
func Resolve(c Config, lookup func(string) (string, bool)) (*Compiled, []Warning, error) {
	env := map[string]string{} // setting -> the variable that set it
	var errs []error
	for i := range keys {
		k := &keys[i]
		var first, firstName string
		for _, name := range k.env {
			v, ok := "", false
			if lookup != nil {
				v, ok = lookup(name)
			}
			if !ok {
				continue
			}
			if err := k.set(&c, name, v); err != nil {
				errs = append(errs, err)
				continue
			}
			if firstName == "" {
				first, firstName, env[k.setting] = v, name, name
				continue
			}
			var one Config
			_ = k.set(&one, firstName, first)
			if !reflect.DeepEqual(k.field(&one), k.field(&c)) {
				errs = append(errs, &KeyError{Name: firstName, Msg: fmt.Sprintf("%q and %s=%q disagree: set only one (they are the same setting)",
					first, name, v)})
			}
		}
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	// Warnings come with a compile error too: all at once.
	out, err := c.Compile()
	ws := c.Warnings()
	for i := range ws {
		ws[i].Variable = env[ws[i].Setting]
	}
	for _, se := range SettingErrors(err) {
		se.Variable = env[se.Setting]
	}
	return out, ws, err
}

// Alias returns YuniKorn's other ConfigMap key of setting, or "".
func Alias(setting string) string {
	if i := slices.IndexFunc(keys, func(k key) bool { return k.setting == setting }); i >= 0 {
		return keys[i].alias
	}
	return ""
}
