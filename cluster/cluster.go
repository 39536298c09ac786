// Package cluster holds usher's cluster credentials, loaded once, and the
// reads of other cluster objects built on them (the adoption rule's
// owner, propagators' parents, what placement reads of Namespaces and
// Kueue's LocalQueues), shared by all that talk to the API server.
package cluster

import (
	"cmp"
	"context"

	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/usherhq/usher/auth"
)

// Client is usher's cluster credentials and the core API client built on
// them, with usher's user agent unless the credentials name one.
type Client struct {
	Config *rest.Config
	Core   *corev1client.CoreV1Client
}

// Load loads the credentials as auth.LoadKubeConfig does, or returns
// auth.ErrNoCluster when there are none.
func Load(kubeconfig string) (*Client, error) {
	rc, err := auth.LoadKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	rc.UserAgent = cmp.Or(rc.UserAgent, "usher")
	core, err := corev1client.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &Client{Config: rc, Core: core}, nil
}

// Get returns the JSON of the object at an API path
// (/apis/apps/v1/namespaces/NS/replicasets/NAME), read with one GET.
func (c *Client) Get(ctx context.Context, path string) ([]byte, error) {
	return c.Core.RESTClient().Get().AbsPath(path).DoRaw(ctx)
}
