// Package cluster holds usher's cluster credentials, loaded once, and the
// reads of other cluster objects built on them (the adoption rule's
// owner, propagators' parents, what placement reads of Namespaces and
// Kueue's LocalQueues), shared by all that talk to the API server.
package cluster

import (
	"cmp"
	"context"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/usherhq/usher/auth"
)

// Client is usher's cluster credentials and the clients built on them,
// with usher's user agent unless the credentials name one.
type Client struct {
	Config *rest.Config
	kubernetes.Interface
}

// Load loads the credentials as auth.LoadKubeConfig does, or returns
// auth.ErrNoCluster when there are none.
func Load(kubeconfig string) (*Client, error) {
	rc, err := auth.LoadKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
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
