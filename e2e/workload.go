//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"

	"github.com/usherhq/usher/identity"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UserInfoAnnotation is the annotation usher stamps on pods and pod
// templates: {"user":"…","groups":[…]}.
const UserInfoAnnotation = "yunikorn.apache.org/user.info"

// Image is the container image of test workloads. Nothing pulls it: the
// cluster has no kubelet.
const Image = "registry.invalid/usher-e2e/pause:1"

// PodSpec is a minimal valid pod spec for test workloads.
func PodSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: Image}}}
}

// Pod returns a Pod named name in namespace ns, with annotations.
func Pod(ns, name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
		Spec:       PodSpec(),
	}
}

// Deployment returns a Deployment named name in namespace ns with replicas
// pods whose template carries templateAnnotations.
func Deployment(ns, name string, replicas int32, templateAnnotations map[string]string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: templateAnnotations},
				Spec:       PodSpec(),
			},
		},
	}
}

// UserInfoJSON renders the user.info annotation value for user and groups.
func UserInfoJSON(user string, groups ...string) string {
	if groups == nil {
		groups = []string{}
	}
	b, _ := json.Marshal(struct {
		User   string   `json:"user"`
		Groups []string `json:"groups"`
	}{user, groups})
	return string(b)
}

// UserInfo decodes the user.info annotation from annotations. ok is false
// when there is none; err says why a present one is not valid.
func UserInfo(annotations map[string]string) (info identity.Info, ok bool, err error) {
	v, ok := annotations[UserInfoAnnotation]
	if !ok {
		return identity.Info{}, false, nil
	}
	var raw struct {
		User   string   `json:"user"`
		Groups []string `json:"groups"`
	}
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return identity.Info{}, true, fmt.Errorf("e2e: annotation %s=%q: %w", UserInfoAnnotation, v, err)
	}
	return identity.Info{User: raw.User, Groups: raw.Groups}, true, nil
}
