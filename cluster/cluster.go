// Package cluster holds usher's cluster credentials, loaded once, and the
// reads of other cluster objects built on them (the adoption rule's
// owner, propagators' parents, what placement reads of Namespaces and
// Kueue's LocalQueues), shared by all that talk to the API server.
package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrNoCluster reports that no cluster credentials were found: no
// kubeconfig file was given and the process does not run in a pod.
var ErrNoCluster = errors.New("no cluster: not running in a pod (KUBERNETES_SERVICE_HOST unset) and no --kubeconfig given")

// Client is usher's cluster credentials and the clients built on them,
// with usher's user agent unless the credentials name one.
type Client struct {
	Config *rest.Config
	kubernetes.Interface
}

// Load loads the credentials: the kubeconfig file when one is given (only
// that file, so a developer's own credentials are never picked up by
// accident), else the pod's service account, else ErrNoCluster.
func Load(kubeconfig string) (*Client, error) {
	var rc *rest.Config
	var err error
	if kubeconfig != "" {
		rc, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
	} else if rc, err = rest.InClusterConfig(); errors.Is(err, rest.ErrNotInCluster) {
		return nil, ErrNoCluster
	} else if err != nil {
		return nil, fmt.Errorf("in-cluster configuration: %w", err)
	}
	rc.UserAgent = cmp.Or(rc.UserAgent, "usher")
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &Client{Config: rc, Interface: cs}, nil
}

// Get returns the JSON of the object at an API path
// (/apis/apps/v1/namespaces/NS/replicasets/NAME), read with one GET.
func (c *Client) Get(ctx context.Context, path string) ([]byte, error) {
	return c.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
}
