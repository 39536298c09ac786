package auth

import (
	"context"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// KubeReviewer sends TokenReviews and SubjectAccessReviews to a
// Kubernetes API server.
type KubeReviewer struct{ cs kubernetes.Interface }

// NewKubeReviewer returns a reviewer using cfg (from cluster.Load), allowing (unless cfg says
// otherwise) 200 requests a second with bursts of 400, as kube-apiserver's
// delegated authentication does.
func NewKubeReviewer(cfg *rest.Config) (*KubeReviewer, error) {
	base := rest.CopyConfig(cfg)
	base.ContentType = runtime.ContentTypeJSON
	if base.QPS == 0 {
		base.QPS, base.Burst = 200, 400
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
