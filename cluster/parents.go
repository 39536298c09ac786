package cluster

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/internal/ttlcache"
)

// Parents reads the parents propagators copy identities from, and
// Namespaces and LocalQueues for placement: a metadata-only informer per
// kind, started on first use, keeps what is read of each object; a miss is
// one GET. Pods, which outnumber every other parent kind
// (docs/benchmarks.md), are read by GET and kept for podTTL.
type Parents struct {
	client metadata.Interface
	dyn    dynamic.Interface // for LocalQueues
	ctx    context.Context
	mu     sync.Mutex
	kinds  map[schema.GroupVersionResource]cache.SharedIndexInformer
	pods   *ttlcache.Cache[*metav1.PartialObjectMetadata]
}

// podTTL is how long a pod read by GET answers: a burst of executors
// created by one driver costs one GET. A pod's stamp never changes and a
// recreated pod has another uid, so only a weak link (no uid) can read a
// deleted pod's stamp, for this long.
const podTTL = 30 * time.Second

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// stampKeys are the annotations kept of a parent.
var stampKeys = []string{settings.UserInfoAnnotation, settings.DirectoryGroupsAnnotation}

// NewParents reads with c's credentials; its informers stop with ctx.
func (c *Client) NewParents(ctx context.Context) (*Parents, error) {
	mc, err := metadata.NewForConfig(c.Config)
	if err != nil {
		return nil, err
	}
	p := NewParentsFor(ctx, mc)
	p.dyn, err = dynamic.NewForConfig(c.Config)
	return p, err
}

// NewParentsFor reads through client.
func NewParentsFor(ctx context.Context, client metadata.Interface) *Parents {
	return &Parents{client: client, ctx: ctx, kinds: map[schema.GroupVersionResource]cache.SharedIndexInformer{},
		pods: ttlcache.New[*metav1.PartialObjectMetadata](4096, nil)}
}

// Watch starts the informers of kinds (already started ones are kept).
func (p *Parents) Watch(kinds ...settings.Kind) {
	for _, k := range kinds {
		if k.GVR() != podsGVR {
			p.informer(k.GVR(), stampKeys)
		}
	}
}

// informer returns gvr's metadata informer, which keeps the annotations keys.
func (p *Parents) informer(gvr schema.GroupVersionResource, keys []string) cache.SharedIndexInformer {
	return p.start(gvr, func() cache.SharedIndexInformer {
		return metadatainformer.NewFilteredMetadataInformer(p.client, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	}, func(obj any) (any, error) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			return keep(m, keys), nil
		}
		return obj, nil
	})
}

// start returns gvr's informer, made by build and keeping what keep
// returns of each object, started on first use.
func (p *Parents) start(gvr schema.GroupVersionResource, build func() cache.SharedIndexInformer, keep cache.TransformFunc) cache.SharedIndexInformer {
	p.mu.Lock()
	defer p.mu.Unlock()
	if inf := p.kinds[gvr]; inf != nil {
		return inf
	}
	inf := build()
	_ = inf.SetTransform(keep)
	go inf.RunWithContext(p.ctx)
	p.kinds[gvr] = inf
	return inf
}

// Get returns what is kept of the parent of kind k named namespace/name
// (its uid, user.info and usher.io/directory-groups); nil when there is
// none. A cached object with another uid than uid (when set) is read again.
func (p *Parents) Get(ctx context.Context, k settings.Kind, namespace, name, uid string) (*metav1.PartialObjectMetadata, error) {
	if gvr := k.GVR(); gvr != podsGVR {
		return p.meta(ctx, gvr, namespace, name, uid, stampKeys)
	}
	key := namespace + "/" + name
	if m, ok := p.pods.Get(key, time.Now()); ok && (uid == "" || string(m.UID) == uid) {
		return m, nil
	}
	m, err := p.get(ctx, podsGVR, namespace, name, stampKeys)
	if m != nil {
		p.pods.Put(key, m, time.Now().Add(podTTL))
	}
	return m, err
}

// meta returns namespace/name as gvr's informer keeps it; a miss (not
// synced yet, created since the last event, or another uid than uid when
// set) is one GET. nil when it does not exist.
func (p *Parents) meta(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, uid string, keys []string) (*metav1.PartialObjectMetadata, error) {
	if obj, ok := cached(p.informer(gvr, keys), cache.NewObjectName(namespace, name).String()); ok {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok && (uid == "" || string(m.UID) == uid) {
			return m, nil
		}
	}
	return p.get(ctx, gvr, namespace, name, keys)
}

// get reads namespace/name with one GET; nil when it does not exist.
func (p *Parents) get(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string, keys []string) (*metav1.PartialObjectMetadata, error) {
	m, err := p.client.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return keep(m, keys), nil
}

// keep is what the caches keep of m: its name, namespace, uid and the
// annotations keys (nil for none).
func keep(m *metav1.PartialObjectMetadata, keys []string) *metav1.PartialObjectMetadata {
	var ann map[string]string
	for _, key := range keys {
		if v, ok := m.Annotations[key]; ok {
			if ann == nil {
				ann = make(map[string]string, len(keys))
			}
			ann[key] = v
		}
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, Annotations: ann}}
}
