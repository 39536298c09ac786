// Package settings holds the admission webhook's settings apart from the
// webhook (as yunikorn-k8shim keeps pkg/admission/conf): the schema, its
// defaults, its ConfigMap keys and variables, validation into Compiled,
// the pattern lint and the namespace matchCondition.
//
// Regular expressions are unanchored, as YuniKorn uses them: "admin" also
// matches "notadmin"; Warnings reports patterns that are not anchored.
package settings

import (
	"cmp"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/utils/ptr"
)

// The annotations the webhook writes: no setting may name them.
const (
	UserInfoAnnotation        = "yunikorn.apache.org/user.info"
	DirectoryGroupsAnnotation = "usher.io/directory-groups"
)

// Config is the admissionController block of the usher configuration; the
// zero value is the default. Nil (unset) and empty (none) lists differ.
type Config struct {
	// AccessControl says who may supply the user.info annotation.
	AccessControl AccessControl `yaml:"accessControl"`

	// ProcessNamespaces, when not empty, limits the webhook to the
	// namespaces it matches; others are allowed unchanged. Default: empty.
	ProcessNamespaces Patterns `yaml:"processNamespaces"`

	// BypassNamespaces are namespaces whose objects are allowed unchanged,
	// checked first. Default (unset): "^kube-system$".
	BypassNamespaces Patterns `yaml:"bypassNamespaces"`

	// EnforceQueueACLs turns on the queue check: the queues of the markers
	// must let the effective identity submit. Default: false.
	EnforceQueueACLs bool `yaml:"enforceQueueACLs"`

	// EnforceQueueACLsMode is what a failed queue check does: "deny" (default),
	// or "warn": admitted with a warning and an audit record. Failures to
	// decide and a forged user.info always deny.
	EnforceQueueACLsMode string `yaml:"enforceQueueACLsMode"`

	// QueueSources lists the labels and annotations that name a workload's
	// queue. Default (unset): the markers of YuniKorn, Kueue, Volcano and
	// KAI; an empty list reads none: every object targets the default queue.
	QueueSources []QueueSource `yaml:"queueSources"`

	// QueueMapping turns a marker's value into a queue path. Default: the
	// value, with "root." before it unless it starts with root.
	QueueMapping QueueMapping `yaml:"queueMapping"`

	// Partition is the partition the checks use. Default: "default".
	Partition string `yaml:"partition"`

	// EnforceDeleteACLs turns on YARN's kill rule for DELETE of pods and
	// workloads (docs/delete.md). Default: false.
	EnforceDeleteACLs bool `yaml:"enforceDeleteACLs"`

	// EnforceDeleteACLsMode is EnforceQueueACLsMode for the kill rule: "deny" (default) or "warn".
	EnforceDeleteACLsMode string `yaml:"enforceDeleteACLsMode"`

	// ModifyACLAnnotation holds a workload's modify ACL in YARN syntax
	// ("bob,carol data-eng"), read where user.info is. Default: "usher.io/modify-acl".
	ModifyACLAnnotation string `yaml:"modifyACLAnnotation"`

	// StampGroups is which groups the stamp carries with groups mode resolve
	// or merge: "decided" (default) those usher judged with, the directory's
	// listed in DirectoryGroupsAnnotation; "given" the API server's, as YuniKorn stamps.
	StampGroups string `yaml:"stampGroups"`

	// StampGroupsOnError is what a CREATE does when the directory cannot answer
	// and enforceQueueACLs is off (on, it is denied): "given" (default) stamps
	// the API server's groups, marked "unavailable", with a warning; "deny" refuses.
	StampGroupsOnError string `yaml:"stampGroupsOnError"`

	// CustomResources are the custom resource kinds stamped and guarded
	// beside pods and workloads. Default: none.
	CustomResources []CustomResource `yaml:"customResources"`

	// DelegatedAdministration decides writes of usher's ConfigMap and of the
	// namespace annotations YuniKorn reads by the writer's queue admin rights
	// (docs/delegated-administration.md): "off" (default), "warn" or "enforce".
	DelegatedAdministration string `yaml:"delegatedAdministration"`

	// TrustedSetters may write anything under delegatedAdministration (the
	// chart's upgrades, GitOps service accounts), by exact name, as
	// system:masters may. Default: none.
	TrustedSetters TrustedSetters `yaml:"trustedSetters"`
}

// TrustedSetters names users (service accounts too) and groups exactly.
type TrustedSetters struct {
	Users  []string `yaml:"users"`
	Groups []string `yaml:"groups"`
}

// Values of DelegatedAdministration.
const DelegationOff, DelegationWarn, DelegationEnforce = "off", "warn", "enforce"

// Values of StampGroups and StampGroupsOnError.
const (
	StampDecided = "decided"
	StampGiven   = "given"
	StampDeny    = "deny"
)

// Modes of enforceQueueACLsMode and enforceDeleteACLsMode.
const (
	ModeDeny = "deny"
	ModeWarn = "warn"
)

// AccessControl says who may supply the user.info annotation.
type AccessControl struct {
	// BypassAuth lets every submitter supply a valid user.info and leaves
	// objects with the legacy username label unstamped, as YuniKorn does. Default: false.
	BypassAuth bool `yaml:"bypassAuth"`

	// TrustControllers lets SystemUsers (the controllers that copy it into
	// what they create) supply the annotation. Default: true.
	TrustControllers *bool `yaml:"trustControllers"`

	// SystemUsers matches the controllers' user names. Default (unset):
	// defaultSystemUsers; empty trusts no controller.
	SystemUsers Patterns `yaml:"systemUsers"`

	// ExternalUsers matches users trusted to supply the annotation (front
	// ends such as Airflow or Livy). Default: none.
	ExternalUsers Patterns `yaml:"externalUsers"`

	// ExternalGroups matches groups whose members are trusted to supply the annotation. Default: none.
	ExternalGroups Patterns `yaml:"externalGroups"`

	// Propagators may copy the user.info of the parent (by controller
	// ownerReference) onto what they create, never write another. Default: none.
	Propagators []Propagator `yaml:"propagators"`

	// UnstampedParents is what a propagator's object gets when its parent has no
	// user.info: "propagatorIdentity" (default) its own, warned; "deny" a denial.
	UnstampedParents string `yaml:"unstampedParents"`
}

// Patterns is a list of regular expressions: in YAML a list, or one
// comma-separated string (YuniKorn's form). Blank entries are dropped;
// nil is unset, empty is none.
type Patterns []string

// ParsePatterns splits a comma-separated string, trimming each; a blank
// string yields an empty, non-nil Patterns.
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

// NodeError is a YAML value of the wrong shape at its line and column.
type NodeError struct {
	Line, Column int
	Msg          string
}

func (e *NodeError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// QueueSource is one place a workload names its target queue.
type QueueSource struct {
	Kind      string `yaml:"kind"`      // "label" or "annotation"
	Key       string `yaml:"key"`       // the label or annotation key, e.g. kueue.x-k8s.io/queue-name
	Scheduler string `yaml:"scheduler"` // the scheduler that reads this marker
	Template  string `yaml:"template"`  // when set, replaces QueueMapping.Template for this source
	// Level is where the scheduler reads this marker: "pod" (YuniKorn: only
	// the pods' marker counts; pods without one run in the default queue) or
	// "workload" (every level counts). Default: "pod" for yunikorn, else "workload".
	Level string `yaml:"level"`
}

// Levels of QueueSource.Level.
const (
	LevelPod      = "pod"
	LevelWorkload = "workload"
)

// defaultQueueSources are the batch schedulers' queue markers.
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
// Templates replace {value}, {namespace} and {scheduler} (Kueue's
// LocalQueues: "root.{namespace}.{value}"); a result that is no queue path
// denies the object.
type QueueMapping struct {
	Template string              `yaml:"template"` // for sources without their own. Default: none (rule 4)
	Table    []QueueMappingEntry `yaml:"table"`    // explicit mappings, tried first, in order
}

// QueueMappingEntry maps one marker value to a queue.
type QueueMappingEntry struct {
	Scheduler string `yaml:"scheduler"` // limits the entry to sources of this scheduler; empty: any
	Namespace string `yaml:"namespace"` // limits the entry to objects in this namespace; empty: any
	Value     string `yaml:"value"`     // the marker value to match exactly; required
	Queue     string `yaml:"queue"`     // the queue path; required
}

// Defaults for the settings documented on Config and AccessControl.
const (
	DefaultPartition           = "default"
	DefaultTrustControllers    = true
	DefaultModifyACLAnnotation = "usher.io/modify-acl"
)

// defaultSystemUsers are the per-controller service accounts and the
// shared controller-manager user (YuniKorn's user/group lookup design).
var defaultSystemUsers = Patterns{"^system:serviceaccount:kube-system:", "^system:kube-controller-manager$"}

var defaultBypassNamespaces = Patterns{"^kube-system$"}

// Defaulted returns c with every unset field set to its default.
func (c Config) Defaulted() Config {
	c.AccessControl.TrustControllers = ptr.To(ptr.Deref(c.AccessControl.TrustControllers, DefaultTrustControllers))
	for _, k := range keys {
		if p, ok := k.field(&c).(*Patterns); ok && *p == nil {
			*p = append(Patterns{}, k.def...)
		}
	}
	if c.QueueSources == nil {
		c.QueueSources = append([]QueueSource{}, defaultQueueSources...)
	}
	c.Partition = cmp.Or(c.Partition, DefaultPartition)
	c.ModifyACLAnnotation = cmp.Or(c.ModifyACLAnnotation, DefaultModifyACLAnnotation)
	c.StampGroups = cmp.Or(c.StampGroups, StampDecided)
	c.StampGroupsOnError = cmp.Or(c.StampGroupsOnError, StampGiven)
	c.DelegatedAdministration = cmp.Or(c.DelegatedAdministration, DelegationOff)
	return c
}
