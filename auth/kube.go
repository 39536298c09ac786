package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrNoCluster reports that no cluster credentials were found: no
// kubeconfig file was given and the process does not run in a pod.
var ErrNoCluster = errors.New("no cluster: not running in a pod (KUBERNETES_SERVICE_HOST unset) and no --kubeconfig given")

// LoadKubeConfig returns the credentials usher sends reviews with: the
// kubeconfig file when one is given (only that file, so a developer's own
// credentials are never picked up by accident), else the pod's service
// account, else ErrNoCluster.
func LoadKubeConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if errors.Is(err, rest.ErrNotInCluster) {
		return nil, ErrNoCluster
	}
	if err != nil {
		return nil, fmt.Errorf("in-cluster configuration: %w", err)
	}
	return cfg, nil
}

// KubeReviewer sends TokenReviews and SubjectAccessReviews to a
// Kubernetes API server.
type KubeReviewer struct{ cs kubernetes.Interface }

// NewKubeReviewer returns a reviewer using cfg, allowing (unless cfg says
// otherwise) 200 requests a second with bursts of 400, as kube-apiserver's
// delegated authentication does.
func NewKubeReviewer(cfg *rest.Config) (*KubeReviewer, error) {
	base := rest.CopyConfig(cfg)
	base.ContentType = runtime.ContentTypeJSON
	if base.QPS == 0 {
		base.QPS, base.Burst = 200, 400
	}
	if base.UserAgent == "" {
		base.UserAgent = "usher"
	}
	hc, err := rest.HTTPClientFor(base)
	if err != nil {
		return nil, err
	}
	// The transport adds usher's credentials to every request, and a
	// TokenReview carries the caller's token: a redirect would send them
	// wherever it points.
	hc.CheckRedirect = func(req *http.Request, _ []*http.Request) error {
		return fmt.Errorf("the API server redirected to %q, which usher does not follow", req.URL.Redacted())
	}
	cs, err := kubernetes.NewForConfigAndClient(base, hc)
	if err != nil {
		return nil, err
	}
	return &KubeReviewer{cs}, nil
}

// CreateTokenReview implements TokenReviewer.
func (r *KubeReviewer) CreateTokenReview(ctx context.Context, tr *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	out, err := r.cs.AuthenticationV1().TokenReviews().Create(ctx, tr, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("tokenreview: %w", err)
	}
	return out, nil
}

// CreateSubjectAccessReview implements SubjectAccessReviewer.
func (r *KubeReviewer) CreateSubjectAccessReview(ctx context.Context, sar *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
	out, err := r.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("subjectaccessreview: %w", err)
	}
	return out, nil
}
