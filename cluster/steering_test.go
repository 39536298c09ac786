package cluster

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"
)

func namespace(name string, ann map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: ann}}
}

func localQueue(ns, name, cq string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"big": "never kept"}},
		"spec":     map[string]any{"clusterQueue": cq, "stopPolicy": "None"}}}
}

// A Namespace's parent-queue annotation and a LocalQueue's ClusterQueue
// are read by GET before the informer syncs, then from its cache, which
// keeps nothing else; what does not exist is "" or not ok.
func TestParentQueueAndClusterQueue(t *testing.T) {
	scheme := metadatafake.NewTestScheme()
	scheme.AddKnownTypeWithName(schema.GroupVersion{Version: "v1"}.WithKind("Namespace"), &metav1.PartialObjectMetadata{})
	scheme.AddKnownTypeWithName(schema.GroupVersion{Version: "v1"}.WithKind("NamespaceList"), &metav1.PartialObjectMetadataList{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := NewParentsFor(ctx, metadatafake.NewSimpleMetadataClient(scheme,
		namespace("web", map[string]string{ParentQueueAnnotation: "root.prod", "other": "x"}), namespace("plain", nil)))
	p.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{LocalQueues: "LocalQueueList"},
		localQueue("web", "team", "research"))
	check := func(when string) {
		if pq, err := p.ParentQueue(ctx, "web"); pq != "root.prod" || err != nil {
			t.Errorf("%s: web's parent queue %q %v", when, pq, err)
		}
		if pq, err := p.ParentQueue(ctx, "plain"); pq != "" || err != nil {
			t.Errorf("%s: plain's parent queue %q %v", when, pq, err)
		}
		if pq, err := p.ParentQueue(ctx, "gone"); pq != "" || err != nil {
			t.Errorf("%s: a missing namespace: %q %v", when, pq, err)
		}
		if cq, ok, err := p.ClusterQueue(ctx, "web", "team"); cq != "research" || !ok || err != nil {
			t.Errorf("%s: LocalQueue web/team: %q %v %v", when, cq, ok, err)
		}
		if _, ok, err := p.ClusterQueue(ctx, "web", "gone"); ok || err != nil {
			t.Errorf("%s: a missing LocalQueue: %v %v", when, ok, err)
		}
	}
	check("before sync")
	nsInf, lqInf := p.kinds[namespaces], p.kinds[LocalQueues]
	if !cache.WaitForCacheSync(ctx.Done(), nsInf.HasSynced, lqInf.HasSynced) {
		t.Fatal("the informers never synced")
	}
	check("from the cache")
	if obj, _, _ := nsInf.GetStore().GetByKey("web"); len(obj.(*metav1.PartialObjectMetadata).Annotations) != 1 {
		t.Errorf("the Namespace cache keeps %+v", obj)
	}
	if obj, _, _ := lqInf.GetStore().GetByKey("web/team"); len(obj.(*unstructured.Unstructured).Object) != 2 || obj.(*unstructured.Unstructured).GetLabels() != nil {
		t.Errorf("the LocalQueue cache keeps %+v", obj)
	}
}
