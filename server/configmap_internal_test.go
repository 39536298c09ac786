package server

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// YuniKorn's two ConfigMaps merge with yunikorn-defaults first, whatever
// the order given, and each key of yunikorn-configs wins; diagnostics name
// the ConfigMap that holds the partitions (service.policyGroup's key).
func TestConfigMapsMergeAsYuniKorn(t *testing.T) {
	configs := ConfigMapRef{Namespace: "yunikorn", Name: "yunikorn-configs"}
	defaults := ConfigMapRef{Namespace: "yunikorn", Name: "yunikorn-defaults"}
	c := &cmSource{refs: orderRefs([]ConfigMapRef{configs, defaults})}
	if c.refs[0] != defaults {
		t.Fatalf("order %v: yunikorn-defaults must come first", c.refs)
	}
	cm := func(r ConfigMapRef, rv string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: r.Name, ResourceVersion: rv}, Data: data}
	}
	objs := []*corev1.ConfigMap{
		cm(defaults, "7", map[string]string{"service.policyGroup": "batch", "batch.yaml": "defaults", "admissionController.filtering.bypassAuth": "false"}),
		cm(configs, "9", map[string]string{"batch.yaml": "configs"}),
	}
	data, name, _, gen := c.merged(objs, nil)
	if data["batch.yaml"] != "configs" || data["admissionController.filtering.bypassAuth"] != "false" || name != "configmap/yunikorn/yunikorn-configs" {
		t.Fatalf("merged %v named %s", data, name)
	}
	if gen != "configmap/yunikorn/yunikorn-defaults@7,configmap/yunikorn/yunikorn-configs@9" {
		t.Fatalf("generation %q", gen)
	}
	// A change under review replaces its ConfigMap; a missing one is empty.
	data, name, _, gen = c.merged([]*corev1.ConfigMap{objs[0], nil}, cm(configs, "", map[string]string{"queues.yaml": "x"}))
	if data["batch.yaml"] != "defaults" || name != "configmap/yunikorn/yunikorn-defaults" || gen != "configmap/yunikorn/yunikorn-defaults@7,configmap/yunikorn/yunikorn-configs@new" {
		t.Fatalf("with a change under review: %v %s %s", data, name, gen)
	}
	data, _, _, gen = c.merged([]*corev1.ConfigMap{nil, objs[1]}, nil)
	if len(data) != 1 || gen != "configmap/yunikorn/yunikorn-defaults@absent,configmap/yunikorn/yunikorn-configs@9" {
		t.Fatalf("without yunikorn-defaults: %v %s", data, gen)
	}
}

func TestParseConfigMapRef(t *testing.T) {
	for _, bad := range []string{"", "ns", "/n", "ns/", "a/b/c"} {
		if _, err := ParseConfigMapRef(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if r, err := ParseConfigMapRef(" usher-system/usher-config "); err != nil || r.String() != "configmap/usher-system/usher-config" {
		t.Fatal(r, err)
	}
}
