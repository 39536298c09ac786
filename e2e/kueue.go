//go:build e2e

package e2e

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// What hack/e2e-cluster.sh sets up for Kueue and KWOK (KUEUE_NS_LABEL,
// create_nodes): Kueue manages Jobs only in namespaces labelled
// KueueNamespaceLabel=true; the fake nodes kwok-node-N are labelled
// KWOKNodeLabel=KWOKNodeValue and tainted KWOKTaint=KWOKTaintValue:NoSchedule,
// so only pods that tolerate the taint (those Kueue admits through a
// ResourceFlavor that adds the toleration) are scheduled there.
const (
	KueueNamespaceLabel = "usher-e2e/kueue"
	KWOKNodeLabel       = "type"
	KWOKNodeValue       = "kwok"
	KWOKTaint           = "kwok.x-k8s.io/node"
	KWOKTaintValue      = "fake"
)

// Kueue's kinds, in the version its controller stores.
var (
	ResourceFlavors = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "resourceflavors"}
	ClusterQueues   = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "clusterqueues"}
	LocalQueues     = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"}
	Workloads       = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}
)

// Dynamic returns a dynamic client that authenticates as user, for kinds
// the e2e module has no Go types for (Kueue's).
func (c *Cluster) Dynamic(user string) (dynamic.Interface, error) {
	cfg, err := c.RESTConfig(user)
	if err != nil {
		return nil, err
	}
	return dynamic.NewForConfig(cfg)
}
