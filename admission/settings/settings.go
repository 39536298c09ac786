// Package settings holds the admission webhook's settings, apart from
// the webhook that uses them (as yunikorn-k8shim keeps pkg/admission/conf
// apart from its controller): the schema of the admissionController block
// and its defaults (Config, Defaulted), the ConfigMap keys and the
// ADMISSION_CONTROLLER_* variables in one table (keys.go), validation into
// an immutable Compiled form with typed errors (SettingError, KeyError),
// the anchoring lint of the pattern settings (lint.go) and the webhook
// matchCondition the namespace settings make (cel.go).
//
// Regular expressions (systemUsers, externalUsers, externalGroups,
// processNamespaces, bypassNamespaces) are used as written with
// regexp.MatchString, as YuniKorn uses them: they are not anchored for
// you, so "admin" also matches "notadmin"; Warnings reports such
// patterns.
package settings

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The annotations the webhook writes: no setting may name them.
const (
	UserInfoAnnotation        = "yunikorn.apache.org/user.info"
	DirectoryGroupsAnnotation = "usher.io/directory-groups"
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
	// queue.
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

// Modes of enforceQueueACLsMode and enforceDeleteACLsMode.
const (
	ModeDeny = "deny"
	ModeWarn = "warn"
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
