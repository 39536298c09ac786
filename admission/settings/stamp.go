package settings

import (
	arv1 "k8s.io/api/admissionregistration/v1"

	"github.com/usherhq/usher/internal/jsonscan"
)

// Workload is a kind the webhooks govern, with the path of its pods' metadata.
type Workload struct {
	Group, Resource, Kind, Meta string
}

// Workloads are the kinds the webhooks and the native floor govern.
var Workloads = [...]Workload{
	{"", "pods", "Pod", "metadata"},
	{"", "replicationcontrollers", "ReplicationController", "spec.template.metadata"},
	{"apps", "deployments", "Deployment", "spec.template.metadata"},
	{"apps", "replicasets", "ReplicaSet", "spec.template.metadata"},
	{"apps", "daemonsets", "DaemonSet", "spec.template.metadata"},
	{"apps", "statefulsets", "StatefulSet", "spec.template.metadata"},
	{"batch", "jobs", "Job", "spec.template.metadata"},
	{"batch", "cronjobs", "CronJob", "spec.jobTemplate.spec.template.metadata"},
}

// Limits of a stamp: past them the webhook denies it, never stamping a cut
// list, and the native floor leaves it to the webhook.
const (
	MaxStampGroups = 2048
	MaxStampBytes  = 64 << 10
)

// WorkloadRules are the webhook rules of Workloads for ops, one per API
// group; suffix ("/status") names a subresource.
func WorkloadRules(suffix string, ops ...arv1.OperationType) []arv1.RuleWithOperations {
	scope := arv1.NamespacedScope
	var out []arv1.RuleWithOperations
	for _, w := range Workloads {
		if len(out) == 0 || out[len(out)-1].APIGroups[0] != w.Group {
			out = append(out, arv1.RuleWithOperations{Operations: ops, Rule: arv1.Rule{APIGroups: []string{w.Group}, APIVersions: []string{"v1"}, Scope: &scope}})
		}
		out[len(out)-1].Resources = append(out[len(out)-1].Resources, w.Resource+suffix)
	}
	return out
}

// AppendUserInfo appends the stamp {"user":…,"groups":[…]} in the
// canonical encoding (docs/native.md): encoding/json's, HTML escaping
// included, which the native floor's CEL writes too.
func AppendUserInfo(dst []byte, user string, groups []string) []byte {
	dst = append(dst, `{"user":`...)
	dst = jsonscan.AppendString(dst, user)
	dst = append(dst, `,"groups":`...)
	return append(AppendList(dst, groups), '}')
}

// AppendList appends the JSON array of ss.
func AppendList(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonscan.AppendString(dst, s)
	}
	return append(dst, ']')
}
