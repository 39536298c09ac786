package doctor_test

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"

	"github.com/usherhq/usher/doctor"
	"github.com/usherhq/usher/internal/pki"
)

// The webhooks call usher's Service, as deploy/ and the chart register
// them: the serving certificate is read from the Secret the Deployment
// mounts (the e2e tests cover webhooks called by URL, and the checks that
// need a real API server).
func TestServiceWebhooks(t *testing.T) {
	ca, err := pki.Issue(pki.Spec{CommonName: "usher-ca", IsCA: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	crt, err := pki.Issue(pki.Spec{CommonName: "usher", Hosts: []string{"usher.usher-system.svc"}}, &ca)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pki.Issue(pki.Spec{CommonName: "another-ca", IsCA: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ignore := admissionregistrationv1.Ignore
	webhooks := func(bundle []byte, fp *admissionregistrationv1.FailurePolicyType) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
		// Named otherwise (a chart value): found by the Service they call.
		cc := admissionregistrationv1.WebhookClientConfig{CABundle: bundle,
			Service: &admissionregistrationv1.ServiceReference{Namespace: "usher-system", Name: "usher"}}
		return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "usher-mutating"},
				Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mutate.usher.io", ClientConfig: cc, FailurePolicy: fp}}},
			&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "usher-validating"},
				Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.usher.io", ClientConfig: cc}}}
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "usher", Namespace: "usher-system"}, Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "usher", Args: []string{"serve", "--webhook-auth", "report"}}},
		Volumes:    []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "my-tls"}}}},
	}}}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "my-tls", Namespace: "usher-system"}, Data: map[string][]byte{"tls.crt": pki.CertPEM(crt)}}
	in := doctor.Install{Namespace: "usher-system", Release: "usher", ProbeNamespace: "default"}
	run := func(bundle []byte, fp *admissionregistrationv1.FailurePolicyType) map[string]doctor.Check {
		m, v := webhooks(bundle, fp)
		out := map[string]doctor.Check{}
		for _, c := range doctor.Run(context.Background(), fake.NewClientset(dep, secret, m, v), nil, in) {
			out[c.Name] = c
		}
		return out
	}
	want := func(what string, c doctor.Check, status doctor.Status, says ...string) {
		t.Helper()
		if c.Status != status {
			t.Errorf("%s: %s is %s, want %s: %s", what, c.Name, c.Status, status, c.Detail)
		}
		for _, s := range says {
			if !strings.Contains(c.Detail+" "+c.Fix, s) {
				t.Errorf("%s: %s does not say %q: %s (fix: %s)", what, c.Name, s, c.Detail, c.Fix)
			}
		}
	}

	got := run(pki.CertPEM(ca), nil)
	want("usher's CA", got["ca-bundles"], doctor.OK, "2 webhooks")
	want("usher's CA", got["webhook-configurations"], doctor.OK, "usher-mutating", "usher-validating")
	want("a certificate valid for a day", got["certificate-expiry"], doctor.Warn, "0 days", "renew")
	want("--webhook-auth report", got["webhook-callers"], doctor.Warn, "client-cert")

	got = run(pki.CertPEM(other), &ignore)
	want("another CA", got["ca-bundles"], doctor.Fail, "mutate.usher.io", "unknown authority", "caBundle")
	want("failurePolicy Ignore", got["webhook-configurations"], doctor.Warn, "Ignore")
}

// TestUnstampedParents: the parents propagators copy from that carry no
// user.info are listed, in the namespaces usher processes only.
func TestUnstampedParents(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "usher-config", Namespace: "usher-system"}, Data: map[string]string{
		"queues.yaml":                                   "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n",
		"admissionController.customResources":           "- {group: ray.io, version: v1, kind: RayJob, resource: rayjobs}",
		"admissionController.accessControl.propagators": "- {users: '^system:serviceaccount:ray:kuberay-operator$', parents: [ray.io/RayJob]}",
	}}
	gv := schema.GroupVersion{Group: "ray.io", Version: "v1"}
	scheme := metadatafake.NewTestScheme()
	scheme.AddKnownTypeWithName(gv.WithKind("RayJob"), &metav1.PartialObjectMetadata{})
	scheme.AddKnownTypeWithName(gv.WithKind("RayJobList"), &metav1.PartialObjectMetadataList{})
	job := func(ns, name string, ann map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "ray.io/v1", Kind: "RayJob"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: ann}}
	}
	meta := metadatafake.NewSimpleMetadataClient(scheme, job("team-a", "stamped", map[string]string{"yunikorn.apache.org/user.info": `{"user":"alice"}`}),
		job("team-a", "old", nil), job("kube-system", "bypassed", nil))
	var got doctor.Check
	for _, c := range doctor.Run(context.Background(), fake.NewClientset(cm), meta, doctor.Install{Namespace: "usher-system", Release: "usher"}) {
		if c.Name == "unstamped-parents" {
			got = c
		}
	}
	if got.Status != doctor.Warn || got.Detail != "1 parents carry no user.info: RayJob team-a/old" || !strings.Contains(got.Fix, "unstampedParents") {
		t.Fatalf("%+v", got)
	}
}
