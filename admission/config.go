package admission

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is the admissionController block of the usher configuration:
//
//	admissionController:
//	  accessControl:
//	    bypassAuth: false
//	    trustControllers: true
//	    systemUsers: ["^system:serviceaccount:kube-system:", "^system:kube-controller-manager$"]
//	    externalUsers: ""
//	    externalGroups: ""
//	  processNamespaces: []
//	  bypassNamespaces: ["^kube-system$"]
//	  enforceQueueACLs: false
//	  queueSources: [...]
//	  queueMapping: {...}
//	  partition: default
//	  enforceDeleteACLs: false
//	  enforceQueueACLsMode: deny   # or warn
//	  enforceDeleteACLsMode: deny  # or warn
//	  modifyACLAnnotation: usher.io/modify-acl
//	  stampGroups: decided         # or given
//	  stampGroupsOnError: given    # or deny
//
// The zero value is the default configuration: every unset field takes its
// documented default in Defaulted, the one place defaults are applied. Nil
// (unset) and empty (explicitly none) are different for the pattern lists and
// for QueueSources.
type Config struct {
	// AccessControl says who may supply the user.info annotation.
	AccessControl AccessControl `yaml:"accessControl"`

	// ProcessNamespaces, when not empty, limits the webhook to namespaces
	// matching at least one of these regular expressions; objects in other
	// namespaces are allowed unchanged. Default: empty (every namespace).
	ProcessNamespaces Patterns `yaml:"processNamespaces"`

	// BypassNamespaces are namespaces whose objects are allowed unchanged,
	// checked before ProcessNamespaces. Default (unset): "^kube-system$";
	// an explicit empty list bypasses no namespace.
	BypassNamespaces Patterns `yaml:"bypassNamespaces"`

	// EnforceQueueACLs turns on the queue check at admission: the target
	// queue is read from QueueSources, mapped with QueueMapping, and the
	// QueueAuthorizer must allow the effective identity to submit to it.
	// Default: false.
	EnforceQueueACLs bool `yaml:"enforceQueueACLs"`

	// EnforceQueueACLsMode says what a queue check that fails does: "deny"
	// (the default, also when empty) refuses the request; "warn" admits it
	// with an admission warning carrying the message the denial would
	// carry, and marks its audit record as a warned denial, so a team can
	// roll enforcement out and see who would be refused (Kyverno's Audit
	// mode, Gatekeeper's warn action). Failures to decide and the identity
	// rules (a forged user.info) are always denied.
	EnforceQueueACLsMode string `yaml:"enforceQueueACLsMode"`

	// QueueSources lists, in order, the labels and annotations that name a
	// workload's target queue, and where each scheduler reads them (see
	// QueueSource.Level). Default (unset): the markers of YuniKorn (label
	// and annotation yunikorn.apache.org/queue, label queue), Kueue (label
	// kueue.x-k8s.io/queue-name), Volcano (annotation
	// scheduling.volcano.sh/queue-name) and KAI (label kai.scheduler/queue),
	// in that order; an explicit empty list
	// reads no marker, so every object targets the partition's default
	// queue. At most 16 sources.
	QueueSources []QueueSource `yaml:"queueSources"`

	// QueueMapping turns a marker's value into a queue path. Default: the
	// value as given when it is "root" or starts with "root.", else
	// "root." + value.
	QueueMapping QueueMapping `yaml:"queueMapping"`

	// Partition is the partition whose queues the checks use. Default:
	// "default".
	Partition string `yaml:"partition"`

	// EnforceDeleteACLs turns on YARN's kill rule for Kubernetes DELETE of
	// pods and of the seven workload kinds: only the owner recorded in the
	// object's user.info, members of its modify ACL (ModifyACLAnnotation),
	// admins of its queue or of a parent, cluster admins (the partition
	// adminacl) and application admins (applicationacls admin) may delete
	// it; trusted controllers always may. The DeleteAuthorizer decides.
	// The validating webhook must also be registered for DELETE (see
	// docs/delete.md). Default: false.
	EnforceDeleteACLs bool `yaml:"enforceDeleteACLs"`

	// EnforceDeleteACLsMode is EnforceQueueACLsMode for the kill rule
	// (DELETE, evictions and the Bindings and updates that would change
	// who may delete): "deny" (default) or "warn".
	EnforceDeleteACLsMode string `yaml:"enforceDeleteACLsMode"`

	// ModifyACLAnnotation is the annotation holding a workload's modify ACL
	// in YARN syntax ("users groups", e.g. "bob,carol data-eng"), read where
	// user.info is: on a pod, or on the pod template of a workload. Its
	// members may delete the workload when EnforceDeleteACLs is on. Default
	// (unset): "usher.io/modify-acl".
	ModifyACLAnnotation string `yaml:"modifyACLAnnotation"`

	// StampGroups says which groups the user.info stamp carries when the
	// partition's groups mode is resolve or merge: "decided" (the default,
	// also when empty) stamps the groups usher decided with, the API
	// server's first in their order, then the directory's in the
	// resolver's order (with resolve, the directory's alone), and records
	// the directory's in the annotation DirectoryGroupsAnnotation, so that
	// YuniKorn, which takes a stamped group list as given, sees the
	// identity usher judged; "given" stamps the API server's groups as
	// YuniKorn's admission controller does, and the audit record carries
	// the decided ones. With groups mode given the stamp is the API
	// server's groups either way.
	StampGroups string `yaml:"stampGroups"`

	// StampGroupsOnError says what a CREATE does when the directory
	// cannot answer while stamping the decided groups, with
	// enforceQueueACLs off (with it on, such a review is always denied):
	// "given" (the default, also when empty) stamps the API server's
	// groups with an admission warning, marks the stamp degraded
	// (DirectoryGroupsAnnotation "unavailable") and counts it, so that a
	// directory outage never blocks pod creation where no queue is
	// enforced; "deny" refuses the review.
	StampGroupsOnError string `yaml:"stampGroupsOnError"`
}

// Values of StampGroups and StampGroupsOnError.
const (
	StampDecided = "decided"
	StampGiven   = "given"
	StampDeny    = "deny"
)

// AccessControl holds YuniKorn's admissionController.accessControl settings.
//
// Patterns are Go regular expressions used as written, with
// regexp.MatchString, exactly as YuniKorn does: they are NOT anchored for
// you, so "admin" also matches "notadmin". Anchor them ("^admin$");
// Config.Warnings reports patterns that are not (see patternKey for the
// rule of each setting).
type AccessControl struct {
	// BypassAuth, when true, lets every submitter supply the user.info
	// annotation (it must still be valid), and leaves objects that carry the
	// legacy yunikorn.apache.org/username label but no annotation unstamped,
	// as YuniKorn's "User & Group Resolution" page describes. Default: false.
	BypassAuth bool `yaml:"bypassAuth"`

	// TrustControllers lets submitters matching SystemUsers supply the
	// annotation (the controllers that copy it from a workload's template
	// into the ReplicaSets, Jobs and pods they create). Default (unset):
	// true.
	TrustControllers *bool `yaml:"trustControllers"`

	// SystemUsers matches the user names of the Kubernetes controllers.
	// Default (unset): "^system:serviceaccount:kube-system:" (controllers
	// running with per-controller credentials) and
	// "^system:kube-controller-manager$" (the shared identity of a controller
	// manager without --use-service-account-credentials). An explicit empty
	// value trusts no controller.
	SystemUsers Patterns `yaml:"systemUsers"`

	// ExternalUsers matches user names trusted to supply the annotation
	// (front ends such as Airflow or Livy submitting for their users).
	// Default: none.
	ExternalUsers Patterns `yaml:"externalUsers"`

	// ExternalGroups matches groups whose members are trusted to supply the
	// annotation. Default: none.
	ExternalGroups Patterns `yaml:"externalGroups"`
}

// Patterns is a list of regular expressions. In YAML it is a list of
// strings, one expression per item, or a single string holding expressions
// separated by commas (YuniKorn's form, also used by the ConfigMap keys and
// the environment variables; write a regex that contains a comma in the
// list form). Blank entries are dropped. Nil means unset (the default
// applies); an empty, non-nil value means none.
type Patterns []string

// ParsePatterns splits a comma-separated string of regular expressions,
// trimming blanks around each. An empty or blank string yields an empty,
// non-nil Patterns (none).
func ParsePatterns(s string) Patterns {
	p := Patterns{}
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			p = append(p, part)
		}
	}
	return p
}

// UnmarshalYAML accepts a string (comma separated) or a list of strings.
func (p *Patterns) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*p = ParsePatterns(s)
		return nil
	case yaml.SequenceNode:
		out := make(Patterns, 0, len(n.Content))
		for i, item := range n.Content {
			var s string
			if item.Kind != yaml.ScalarNode || item.Decode(&s) != nil {
				return &NodeError{Line: item.Line, Column: item.Column, Msg: fmt.Sprintf("item %d of the pattern list is not a string", i)}
			}
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		*p = out
		return nil
	default:
		return &NodeError{Line: n.Line, Column: n.Column, Msg: "want a regular expression string or a list of them"}
	}
}

// NodeError is a YAML value of the admission settings that has the wrong
// shape, at its line and column (1-based) in the document decoded. The
// YAML decoder returns it unchanged from Decode; match it with errors.As.
type NodeError struct {
	Line, Column int
	Msg          string
}

func (e *NodeError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// QueueSource is one place a workload names its target queue.
type QueueSource struct {
	// Kind is "label" or "annotation".
	Kind string `yaml:"kind"`
	// Key is the label or annotation key, e.g. kueue.x-k8s.io/queue-name.
	Key string `yaml:"key"`
	// Scheduler names the scheduler that reads this marker (yunikorn, kueue,
	// volcano, kai, ...). It is used in messages, in QueueMapping.Table and
	// as the {scheduler} placeholder.
	Scheduler string `yaml:"scheduler"`
	// Template, when set, maps this source's values instead of
	// QueueMapping.Template; see QueueMapping.
	Template string `yaml:"template"`
	// Level says where the scheduler reads this marker, so that a
	// workload is checked against the queue its pods will run in:
	//
	//   - "pod": on the pods only (YuniKorn). On a workload only the pod
	//     template's marker counts; the same marker on the workload's own
	//     metadata, or on a CronJob's job template, is not read. Pods on
	//     which none of a pod-level scheduler's markers is set run in the
	//     partition's default queue, so they, and the workloads that make
	//     them, are checked against the default queue too.
	//   - "workload": on the workload the pods belong to, or on a pod
	//     created alone (Kueue reads the Job's label; Volcano and KAI read
	//     the owner's markers as well as the pod's). Every level counts.
	//
	// Default (empty): "pod" for scheduler yunikorn, "workload" otherwise.
	Level string `yaml:"level"`
}

// Levels of QueueSource.Level.
const (
	LevelPod      = "pod"
	LevelWorkload = "workload"
)

// defaultQueueSources are the queue markers of the Kubernetes batch
// schedulers, in the order they are read (see Config.QueueSources).
// YuniKorn reads three: the label yunikorn.apache.org/queue, the annotation
// of the same name and the legacy label queue, on the pod.
var defaultQueueSources = []QueueSource{
	{Kind: "label", Key: "yunikorn.apache.org/queue", Scheduler: "yunikorn", Level: LevelPod},
	{Kind: "annotation", Key: "yunikorn.apache.org/queue", Scheduler: "yunikorn", Level: LevelPod},
	{Kind: "label", Key: "queue", Scheduler: "yunikorn", Level: LevelPod},
	{Kind: "label", Key: "kueue.x-k8s.io/queue-name", Scheduler: "kueue", Level: LevelWorkload},
	{Kind: "annotation", Key: "scheduling.volcano.sh/queue-name", Scheduler: "volcano", Level: LevelWorkload},
	{Kind: "label", Key: "kai.scheduler/queue", Scheduler: "kai", Level: LevelWorkload},
}

// QueueMapping turns the value of a queue marker into a queue path.
//
// For a marker with value V on an object in namespace N, read by source S:
//
//  1. the first Table entry whose Value is V, whose Scheduler is empty or
//     S.Scheduler and whose Namespace is empty or N gives the queue;
//  2. else S.Template, if set, is expanded;
//  3. else Template, if set, is expanded;
//  4. else V is used as given when it is "root" or starts with "root.",
//     and "root." + V otherwise.
//
// Templates replace {value}, {namespace} and {scheduler}; for example
// Kueue's namespaced LocalQueues map with "root.{namespace}.{value}". The
// result must be a queue path: "root" or "root." followed by non-empty
// dot-separated names; anything else denies the object with a message
// naming the marker.
type QueueMapping struct {
	// Template is the template for sources without their own. Default: none
	// (rule 4).
	Template string `yaml:"template"`
	// Table lists explicit mappings, tried first, in order.
	Table []QueueMappingEntry `yaml:"table"`
}

// QueueMappingEntry maps one marker value to a queue.
type QueueMappingEntry struct {
	// Scheduler limits the entry to sources of this scheduler; empty: any.
	Scheduler string `yaml:"scheduler"`
	// Namespace limits the entry to objects in this namespace; empty: any.
	Namespace string `yaml:"namespace"`
	// Value is the marker value to match exactly. Required.
	Value string `yaml:"value"`
	// Queue is the queue path. Required.
	Queue string `yaml:"queue"`
}

// Defaults for the settings documented on Config and AccessControl.
const (
	DefaultPartition           = "default"
	DefaultTrustControllers    = true
	DefaultModifyACLAnnotation = "usher.io/modify-acl"
)

// defaultSystemUsers are the default controller identities: the
// per-controller service accounts and the shared controller-manager user
// (YuniKorn's user/group lookup design requires both). Never modified; Defaulted copies it.
var defaultSystemUsers = Patterns{"^system:serviceaccount:kube-system:", "^system:kube-controller-manager$"}

// defaultBypassNamespaces is the default for BypassNamespaces. Never
// modified; Defaulted copies it.
var defaultBypassNamespaces = Patterns{"^kube-system$"}

// DefaultConfig returns the default configuration with every default
// filled in.
func DefaultConfig() Config { return Config{}.Defaulted() }

// Defaulted returns a copy of c with every unset field set to its default.
// It is the one place defaults are applied.
func (c Config) Defaulted() Config {
	if c.AccessControl.TrustControllers == nil {
		t := DefaultTrustControllers
		c.AccessControl.TrustControllers = &t
	} else {
		t := *c.AccessControl.TrustControllers
		c.AccessControl.TrustControllers = &t
	}
	if c.AccessControl.SystemUsers == nil {
		c.AccessControl.SystemUsers = append(Patterns{}, defaultSystemUsers...)
	}
	if c.AccessControl.ExternalUsers == nil {
		c.AccessControl.ExternalUsers = Patterns{}
	}
	if c.AccessControl.ExternalGroups == nil {
		c.AccessControl.ExternalGroups = Patterns{}
	}
	if c.ProcessNamespaces == nil {
		c.ProcessNamespaces = Patterns{}
	}
	if c.BypassNamespaces == nil {
		c.BypassNamespaces = append(Patterns{}, defaultBypassNamespaces...)
	}
	if c.QueueSources == nil {
		c.QueueSources = append([]QueueSource{}, defaultQueueSources...)
	}
	if c.Partition == "" {
		c.Partition = DefaultPartition
	}
	if c.ModifyACLAnnotation == "" {
		c.ModifyACLAnnotation = DefaultModifyACLAnnotation
	}
	if c.StampGroups == "" {
		c.StampGroups = StampDecided
	}
	if c.StampGroupsOnError == "" {
		c.StampGroupsOnError = StampGiven
	}
	return c
}

// Environment variables read by ApplyEnv (the names of YuniKorn's user/group lookup design).
const (
	EnvBypassAuth        = "ADMISSION_CONTROLLER_BYPASS_AUTH"
	EnvTrustControllers  = "ADMISSION_CONTROLLER_TRUST_CONTROLLERS"
	EnvBypassControllers = "ADMISSION_CONTROLLER_BYPASS_CONTROLLERS" // the design page's name for EnvTrustControllers
	EnvSystemUsers       = "ADMISSION_CONTROLLER_SYSTEM_USERS"
	EnvExternalUsers     = "ADMISSION_CONTROLLER_EXTERNAL_USERS"
	EnvExternalGroups    = "ADMISSION_CONTROLLER_EXTERNAL_GROUPS"
)

// ApplyEnv overrides the access-control settings with the environment
// variables YuniKorn's user/group lookup design names, which take precedence over the file:
// ADMISSION_CONTROLLER_BYPASS_AUTH, ADMISSION_CONTROLLER_TRUST_CONTROLLERS
// (or its name in that design, ADMISSION_CONTROLLER_BYPASS_CONTROLLERS; if both are
// set they must agree), ADMISSION_CONTROLLER_SYSTEM_USERS,
// ADMISSION_CONTROLLER_EXTERNAL_USERS and ADMISSION_CONTROLLER_EXTERNAL_GROUPS
// (comma-separated regular expressions). A variable that is set overrides
// the file even when empty (an empty pattern list trusts nobody). Booleans
// are parsed with strconv.ParseBool; a bad one is an error naming the
// variable, and c is then left unchanged. lookup is os.LookupEnv in
// production.
func (c *Config) ApplyEnv(lookup func(string) (string, bool)) error {
	next := *c
	if v, ok := lookup(EnvBypassAuth); ok {
		b, err := parseBool(EnvBypassAuth, v)
		if err != nil {
			return err
		}
		next.AccessControl.BypassAuth = b
	}
	tv, tok := lookup(EnvTrustControllers)
	bv, bok := lookup(EnvBypassControllers)
	var trust *bool
	if tok {
		b, err := parseBool(EnvTrustControllers, tv)
		if err != nil {
			return err
		}
		trust = &b
	}
	if bok {
		b, err := parseBool(EnvBypassControllers, bv)
		if err != nil {
			return err
		}
		if trust != nil && *trust != b {
			return &KeyError{Name: EnvTrustControllers, Msg: fmt.Sprintf("%q and %s=%q disagree: set only one (they are the same setting)",
				tv, EnvBypassControllers, bv)}
		}
		trust = &b
	}
	if trust != nil {
		next.AccessControl.TrustControllers = trust
	}
	if v, ok := lookup(EnvSystemUsers); ok {
		next.AccessControl.SystemUsers = ParsePatterns(v)
	}
	if v, ok := lookup(EnvExternalUsers); ok {
		next.AccessControl.ExternalUsers = ParsePatterns(v)
	}
	if v, ok := lookup(EnvExternalGroups); ok {
		next.AccessControl.ExternalGroups = ParsePatterns(v)
	}
	*c = next
	return nil
}

func parseBool(name, v string) (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return false, &KeyError{Name: name, Msg: fmt.Sprintf("invalid boolean %q: want true or false", v)}
	}
	return b, nil
}

// KeyError is a ConfigMap key (FromConfigMap) or an environment variable
// (ApplyEnv) whose value cannot be used. Name is the key or variable.
// FromConfigMap returns them joined; match each with errors.As.
type KeyError struct {
	Name string
	Msg  string
}

func (e *KeyError) Error() string { return e.Name + ": " + e.Msg }

// KeyErrors returns the KeyErrors in err (one, or several joined with
// errors.Join), in order.
func KeyErrors(err error) []*KeyError { return joined[*KeyError](err) }

// ConfigMap keys read by FromConfigMap.
const (
	configMapPrefix = "admissionController."
	accessPrefix    = configMapPrefix + "accessControl."
)

// ignoredConfigMapKeys are YuniKorn admission-controller keys for features
// usher does not have; FromConfigMap accepts and ignores them so that a
// yunikorn-configs ConfigMap can be read as it is.
var ignoredConfigMapKeys = map[string]bool{
	"admissionController.webHook.amServiceName":           true,
	"admissionController.webHook.schedulerServiceAddress": true,
	"admissionController.filtering.labelNamespaces":       true,
	"admissionController.filtering.noLabelNamespaces":     true,
	"admissionController.filtering.generateUniqueAppId":   true,
	"admissionController.filtering.defaultQueue":          true,
}

// FromConfigMap reads the flat keys of a YuniKorn-style ConfigMap:
//
//	admissionController.accessControl.bypassAuth        "true" | "false"
//	admissionController.accessControl.trustControllers  "true" | "false"
//	admissionController.accessControl.systemUsers       comma-separated regexes
//	admissionController.accessControl.externalUsers     comma-separated regexes
//	admissionController.accessControl.externalGroups    comma-separated regexes
//	admissionController.filtering.processNamespaces     comma-separated regexes (YuniKorn's key)
//	admissionController.filtering.bypassNamespaces      comma-separated regexes (YuniKorn's key)
//	admissionController.processNamespaces              same as the filtering key
//	admissionController.bypassNamespaces               same as the filtering key
//	admissionController.enforceQueueACLs               "true" | "false"
//	admissionController.partition                      partition name
//	admissionController.queueSources                   YAML list, as in the file
//	admissionController.queueMapping                   YAML mapping, as in the file
//	admissionController.enforceDeleteACLs              "true" | "false"
//	admissionController.enforceQueueACLsMode           "deny" | "warn"
//	admissionController.enforceDeleteACLsMode          "deny" | "warn"
//	admissionController.modifyACLAnnotation            annotation key
//	admissionController.stampGroups                    "decided" | "given"
//	admissionController.stampGroupsOnError             "given" | "deny"
//
// Keys outside admissionController.* (queues.yaml, log.*, service.*) belong
// to others and are ignored, as are YuniKorn admission keys for features
// usher does not have (webHook.*, filtering.labelNamespaces,
// filtering.noLabelNamespaces, filtering.generateUniqueAppId,
// filtering.defaultQueue). Any other admissionController.* key is an error
// naming it, so that a typo is not silently ignored. Unset keys keep their
// defaults (applied by Defaulted).
func FromConfigMap(data map[string]string) (Config, error) {
	var c Config
	var errs []error
	set := func(key string, dst *Patterns, v string, alias string) {
		if alias != "" {
			if _, dup := data[alias]; dup {
				errs = append(errs, &KeyError{Name: key, Msg: fmt.Sprintf("%s is the same setting: set only one", alias)})
				return
			}
		}
		*dst = ParsePatterns(v)
	}
	for key, v := range data {
		if !strings.HasPrefix(key, configMapPrefix) {
			continue
		}
		switch key {
		case accessPrefix + "bypassAuth":
			b, err := parseBool(key, v)
			if err != nil {
				errs = append(errs, err)
			}
			c.AccessControl.BypassAuth = b
		case accessPrefix + "trustControllers":
			b, err := parseBool(key, v)
			if err != nil {
				errs = append(errs, err)
			}
			c.AccessControl.TrustControllers = &b
		case accessPrefix + "systemUsers":
			c.AccessControl.SystemUsers = ParsePatterns(v)
		case accessPrefix + "externalUsers":
			c.AccessControl.ExternalUsers = ParsePatterns(v)
		case accessPrefix + "externalGroups":
			c.AccessControl.ExternalGroups = ParsePatterns(v)
		case "admissionController.filtering.processNamespaces":
			set(key, &c.ProcessNamespaces, v, "")
		case "admissionController.filtering.bypassNamespaces":
			set(key, &c.BypassNamespaces, v, "")
		case "admissionController.processNamespaces":
			set(key, &c.ProcessNamespaces, v, "admissionController.filtering.processNamespaces")
		case "admissionController.bypassNamespaces":
			set(key, &c.BypassNamespaces, v, "admissionController.filtering.bypassNamespaces")
		case "admissionController.enforceQueueACLs":
			b, err := parseBool(key, v)
			if err != nil {
				errs = append(errs, err)
			}
			c.EnforceQueueACLs = b
		case "admissionController.enforceQueueACLsMode":
			c.EnforceQueueACLsMode = strings.TrimSpace(v)
		case "admissionController.enforceDeleteACLsMode":
			c.EnforceDeleteACLsMode = strings.TrimSpace(v)
		case "admissionController.partition":
			c.Partition = strings.TrimSpace(v)
		case "admissionController.enforceDeleteACLs":
			b, err := parseBool(key, v)
			if err != nil {
				errs = append(errs, err)
			}
			c.EnforceDeleteACLs = b
		case "admissionController.modifyACLAnnotation":
			c.ModifyACLAnnotation = strings.TrimSpace(v)
		case "admissionController.stampGroups":
			c.StampGroups = strings.TrimSpace(v)
		case "admissionController.stampGroupsOnError":
			c.StampGroupsOnError = strings.TrimSpace(v)
		case "admissionController.queueSources":
			var src []QueueSource
			if err := yaml.Unmarshal([]byte(v), &src); err != nil {
				errs = append(errs, &KeyError{Name: key, Msg: fmt.Sprintf("want a YAML list of {kind, key, scheduler, template, level}: %v", err)})
			}
			if src == nil {
				src = []QueueSource{}
			}
			c.QueueSources = src
		case "admissionController.queueMapping":
			if err := yaml.Unmarshal([]byte(v), &c.QueueMapping); err != nil {
				errs = append(errs, &KeyError{Name: key, Msg: fmt.Sprintf("want a YAML mapping with template and table: %v", err)})
			}
		default:
			if !ignoredConfigMapKeys[key] {
				errs = append(errs, &KeyError{Name: key, Msg: "unknown admission controller setting"})
			}
		}
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return Config{}, errors.Join(errs...)
	}
	return c, nil
}

// sortErrors orders errors by message so that map iteration order does
// not change what is reported.
func sortErrors(errs []error) {
	for i := 1; i < len(errs); i++ {
		for j := i; j > 0 && errs[j].Error() < errs[j-1].Error(); j-- {
			errs[j], errs[j-1] = errs[j-1], errs[j]
		}
	}
}

// Warning is a configuration problem that does not stop usher from
// running but probably does not do what was meant.
type Warning struct {
	// Setting names the setting as the user wrote it: the dotted path of
	// the YAML key (admissionController.accessControl.externalUsers), the
	// ConfigMap key, or the environment variable.
	Setting string
	// Message says what is wrong and how to fix it.
	Message string
	// Pattern is the pattern the warning is about, "" for a warning about
	// the whole setting; Index is its position in the setting's list.
	Pattern string
	Index   int
	// Fix is the pattern to write instead of Pattern, when one rewrite
	// keeps what the pattern says and anchors it; "" otherwise (the
	// message then says what to do).
	Fix string
}

// String renders the warning as "setting: message".
func (w Warning) String() string { return w.Setting + ": " + w.Message }

// Warnings lints c (after defaults): patterns that are not anchored and so
// match more names than they appear to (see patternKey for the rule of
// each setting), patterns that match every name, and settings that weaken
// identity checks. Settings are named by their YAML path. Invalid settings
// are errors from Compile, not warnings.
func (c Config) Warnings() []Warning {
	c = c.Defaulted()
	var ws []Warning
	add := func(setting, format string, args ...any) {
		ws = append(ws, Warning{Setting: setting, Message: fmt.Sprintf(format, args...)})
	}
	ws = append(ws, keySystemUsers.lint(keySystemUsers.setting, c.AccessControl.SystemUsers)...)
	ws = append(ws, keyExternalUsers.lint(keyExternalUsers.setting, c.AccessControl.ExternalUsers)...)
	ws = append(ws, keyExternalGroups.lint(keyExternalGroups.setting, c.AccessControl.ExternalGroups)...)
	ws = append(ws, keyProcessNS.lint(keyProcessNS.setting, c.ProcessNamespaces)...)
	ws = append(ws, keyBypassNS.lint(keyBypassNS.setting, c.BypassNamespaces)...)
	if c.AccessControl.BypassAuth {
		add("admissionController.accessControl.bypassAuth", bypassAuthWarning)
	}
	if !*c.AccessControl.TrustControllers {
		add("admissionController.accessControl.trustControllers", trustControllersWarning)
	}
	if c.EnforceDeleteACLs && !deletesByControllersTrusted(c) {
		add("admissionController.enforceDeleteACLs",
			"is true but neither %q nor %q is a trusted controller (trustControllers and systemUsers): "+
				"garbage collection, Job and ReplicaSet cleanup and namespace deletion will be denied",
			garbageCollectorUser, controllerManagerUser)
	}
	return ws
}

const (
	bypassAuthWarning       = "is true: any submitter may set yunikorn.apache.org/user.info to any identity; use only in a trusted cluster"
	trustControllersWarning = "is false: pods and ReplicaSets that controllers create from stamped workloads will be denied"
)

// EnvWarnings lints the settings the ADMISSION_CONTROLLER_* environment
// variables give (see ApplyEnv), each named by its variable, with the
// rules of Warnings. Variables that are not set are not linted; invalid
// values are errors from ApplyEnv, not warnings.
func EnvWarnings(lookup func(string) (string, bool)) []Warning {
	var ws []Warning
	for _, e := range []struct {
		name string
		key  patternKey
	}{{EnvSystemUsers, keySystemUsers}, {EnvExternalUsers, keyExternalUsers}, {EnvExternalGroups, keyExternalGroups}} {
		if v, ok := lookup(e.name); ok {
			ws = append(ws, e.key.lint(e.name, ParsePatterns(v))...)
		}
	}
	if v, ok := lookup(EnvBypassAuth); ok {
		if b, err := parseBool(EnvBypassAuth, v); err == nil && b {
			ws = append(ws, Warning{Setting: EnvBypassAuth, Message: bypassAuthWarning})
		}
	}
	for _, name := range []string{EnvTrustControllers, EnvBypassControllers} {
		if v, ok := lookup(name); ok {
			if b, err := parseBool(name, v); err == nil && !b {
				ws = append(ws, Warning{Setting: name, Message: trustControllersWarning})
			}
		}
	}
	return ws
}

// EnvOverride is a setting an ADMISSION_CONTROLLER_* variable sets:
// Setting is its YAML path (as Warnings and SettingError name it),
// Variable the variable.
type EnvOverride struct {
	Setting, Variable string
}

// EnvOverrides lists the settings the ADMISSION_CONTROLLER_* variables
// set, in a fixed order, each with the variable that sets it.
func EnvOverrides(lookup func(string) (string, bool)) []EnvOverride {
	var out []EnvOverride
	for _, e := range []EnvOverride{
		{"admissionController.accessControl.bypassAuth", EnvBypassAuth},
		{"admissionController.accessControl.trustControllers", EnvTrustControllers},
		{"admissionController.accessControl.trustControllers", EnvBypassControllers},
		{keySystemUsers.setting, EnvSystemUsers},
		{keyExternalUsers.setting, EnvExternalUsers},
		{keyExternalGroups.setting, EnvExternalGroups},
	} {
		if _, ok := lookup(e.Variable); ok && (len(out) == 0 || out[len(out)-1].Setting != e.Setting) {
			out = append(out, e)
		}
	}
	return out
}

// EnvOverridden lists the settings (by their YAML path, as Warnings names
// them) that the ADMISSION_CONTROLLER_* variables set, so that warnings
// about the file's values of those settings, which are not in force, can
// be dropped.
func EnvOverridden(lookup func(string) (string, bool)) []string {
	var out []string
	for _, e := range EnvOverrides(lookup) {
		out = append(out, e.Setting)
	}
	return out
}

// lint checks each pattern of a setting named setting.
func (k patternKey) lint(setting string, ps Patterns) []Warning {
	var ws []Warning
	for i, p := range ps {
		if strings.Count(p, "{") != strings.Count(p, "}") {
			// The anchors of a piece of a split pattern mean nothing.
			ws = append(ws, Warning{Setting: setting, Pattern: p, Index: i, Message: fmt.Sprintf(
				"pattern %q has unbalanced braces: was a repetition such as {1,3} split at its comma? "+
					"Write patterns containing commas in the YAML list form", p)})
			continue
		}
		if msg, fix, bad := k.lintPattern(p); bad {
			ws = append(ws, Warning{Setting: setting, Pattern: p, Index: i, Message: msg, Fix: fix})
		}
	}
	return ws
}

// The identities the cluster's garbage collector deletes with: its own
// service account, or the shared controller-manager user.
const (
	garbageCollectorUser  = "system:serviceaccount:kube-system:generic-garbage-collector"
	controllerManagerUser = "system:kube-controller-manager"
)

// deletesByControllersTrusted reports whether c (defaulted) trusts the
// garbage collector, under either identity, to delete.
func deletesByControllersTrusted(c Config) bool {
	if !*c.AccessControl.TrustControllers {
		return false
	}
	res, err := compilePatterns("", c.AccessControl.SystemUsers)
	if err != nil {
		return true // Compile reports it
	}
	m := matcher(res)
	return m.match(garbageCollectorUser) || m.match(controllerManagerUser)
}

// compilePatterns compiles ps; errors name the setting and the item.
func compilePatterns(setting string, ps Patterns) ([]*regexp.Regexp, error) {
	out := make([]*regexp.Regexp, 0, len(ps))
	for i, p := range ps {
		re, err := regexp.Compile(p)
		if err != nil {
			var se *syntax.Error
			msg := err.Error()
			if errors.As(err, &se) {
				msg = se.Code.String() + ": " + se.Expr
			}
			return nil, settingErr(setting, i, "", "invalid regular expression %q: %s", p, msg)
		}
		out = append(out, re)
	}
	return out, nil
}
