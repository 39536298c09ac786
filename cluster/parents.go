package cluster

import (
	"context"
	"runtime/debug"
	"sync"
	"unique"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/usherhq/usher/admission/settings"
)

// Parents reads the parents propagators copy identities from: a
// metadata-only informer per kind, started on first use, keeps each
// object's name, uid and usher's two annotations; a miss is one GET.
// It reads Namespaces and LocalQueues for placement the same way.
type Parents struct {
	client metadata.Interface
	dyn    dynamic.Interface // for LocalQueues
	ctx    context.Context
	mu     sync.Mutex
	kinds  map[schema.GroupVersionResource]cache.SharedIndexInformer
	shared stamps
}

// Parent is what Parents keeps of an object.
type Parent struct {
	UID         string
	Annotations map[string]string // user.info and usher.io/directory-groups, when set
}

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
		shared: stamps{maps: map[stampKey]map[string]string{}}}
}

// Watch starts the informers of kinds (already started ones are kept).
func (p *Parents) Watch(kinds ...settings.Kind) {
	for _, k := range kinds {
		p.informer(k.GVR())
	}
}

func (p *Parents) informer(gvr schema.GroupVersionResource) cache.SharedIndexInformer {
	return p.start(gvr, func() cache.SharedIndexInformer {
		return metadatainformer.NewFilteredMetadataInformer(p.client, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	}, func(obj any) (any, error) {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			return p.shared.kept(m), nil
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
	go func() {
		// The first list is garbage once kept: give it back now.
		if cache.WaitForCacheSync(p.ctx.Done(), inf.HasSynced) {
			debug.FreeOSMemory()
		}
	}()
	p.kinds[gvr] = inf
	return inf
}

// Get returns the parent of kind k named namespace/name; ok is false when
// there is none. A cached object with another uid than uid (when set) is
// read again.
func (p *Parents) Get(ctx context.Context, k settings.Kind, namespace, name, uid string) (Parent, bool, error) {
	gvr := k.GVR()
	if obj, ok := cached(p.informer(gvr), namespace+"/"+name); ok {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok && (uid == "" || string(m.UID) == uid) {
			return Parent{UID: string(m.UID), Annotations: m.Annotations}, true, nil
		}
	}
	// Not synced yet, or created since the last event: ask once.
	m, err := p.client.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return Parent{}, false, nil
	case err != nil:
		return Parent{}, false, err
	}
	return Parent{UID: string(m.UID), Annotations: stampOf(m.Annotations)}, true, nil
}

// stamps holds the stamp maps objects share, read-only: a map costs
// more than the rest of a cached object, and 50,000 pods of a hundred
// users hold a hundred maps; up to maxShared stamps.
type stamps struct {
	mu   sync.Mutex
	maps map[stampKey]map[string]string
}

// stampKey is a stamp map's contents, absent annotations told from empty ones.
type stampKey struct {
	info, dir       string
	hasInfo, hasDir bool
}

const maxShared = 1 << 14

// kept is what the cache keeps of m: its name, namespace and uid, and a
// shared map of its stamp annotations.
func (s *stamps) kept(m *metav1.PartialObjectMetadata) *metav1.PartialObjectMetadata {
	ann := stampOf(m.Annotations)
	if ann != nil {
		var k stampKey
		k.info, k.hasInfo = ann[settings.UserInfoAnnotation]
		k.dir, k.hasDir = ann[settings.DirectoryGroupsAnnotation]
		s.mu.Lock()
		if shared, ok := s.maps[k]; ok {
			ann = shared
		} else if len(s.maps) < maxShared {
			s.maps[k] = ann
		}
		s.mu.Unlock()
	}
	return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: unique.Make(m.Namespace).Value(),
		UID: m.UID, Annotations: ann}}
}

// stampOf returns the annotations usher writes of ann, nil for none.
func stampOf(ann map[string]string) map[string]string {
	var out map[string]string
	for _, key := range [...]string{settings.UserInfoAnnotation, settings.DirectoryGroupsAnnotation} {
		if v, ok := ann[key]; ok {
			if out == nil {
				out = make(map[string]string, 2)
			}
			out[key] = v
		}
	}
	return out
}
