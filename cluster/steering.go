package cluster

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// ParentQueueAnnotation is the Namespace annotation YuniKorn's shim passes
// to the placement rules as the tag namespace.parentqueue.
const ParentQueueAnnotation = "yunikorn.apache.org/parentqueue"

var (
	namespaces = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	// LocalQueues are read in the version Kueue v0.17.0 stores.
	LocalQueues = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "localqueues"}
)

// ParentQueue returns Namespace name's ParentQueueAnnotation, "" when it
// has none or does not exist. The informer keeps that annotation alone.
func (p *Parents) ParentQueue(ctx context.Context, name string) (string, error) {
	m, err := p.meta(ctx, namespaces, "", name, "", []string{ParentQueueAnnotation})
	if m == nil {
		return "", err
	}
	return m.Annotations[ParentQueueAnnotation], nil
}

// ClusterQueue returns the spec.clusterQueue of Kueue's LocalQueue
// namespace/name; ok is false when there is none. The informer keeps the
// name, namespace and that field.
func (p *Parents) ClusterQueue(ctx context.Context, namespace, name string) (cq string, ok bool, err error) {
	inf := p.start(LocalQueues, func() cache.SharedIndexInformer {
		return dynamicinformer.NewFilteredDynamicInformer(p.dyn, LocalQueues, "", 0, cache.Indexers{}, nil).Informer()
	}, func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			cq, _, _ := unstructured.NestedString(u.Object, "spec", "clusterQueue")
			return &unstructured.Unstructured{Object: map[string]any{
				"metadata": map[string]any{"name": u.GetName(), "namespace": u.GetNamespace()},
				"spec":     map[string]any{"clusterQueue": cq}}}, nil
		}
		return obj, nil
	})
	obj, ok := cached(inf, namespace+"/"+name)
	if !ok {
		u, err := p.dyn.Resource(LocalQueues).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return "", false, nil
		case err != nil:
			return "", false, err
		}
		obj = u
	}
	cq, _, _ = unstructured.NestedString(obj.(*unstructured.Unstructured).Object, "spec", "clusterQueue")
	return cq, true, nil
}

// cached returns the object at key once inf has synced; a miss is read by
// GET, since it may have been created since the last event.
func cached(inf cache.SharedIndexInformer, key string) (any, bool) {
	if !inf.HasSynced() {
		return nil, false
	}
	obj, ok, _ := inf.GetStore().GetByKey(key)
	return obj, ok
}
