package cluster

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/usherhq/usher/admission/settings"
)

var sparkApps = settings.Kind{Group: "sparkoperator.k8s.io", Version: "v1beta2", Resource: "sparkapplications", Kind: "SparkApplication"}

func sparkApp(name, uid string, ann map[string]string) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "sparkoperator.k8s.io/v1beta2", Kind: "SparkApplication"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", UID: types.UID(uid), Annotations: ann}}
}

func TestParentsFromTheCacheAndByGet(t *testing.T) {
	alice := map[string]string{settings.UserInfoAnnotation: `{"user":"alice","groups":[]}`, "big": "a large annotation usher never keeps"}
	scheme := metadatafake.NewTestScheme()
	gv := schema.GroupVersion{Group: sparkApps.Group, Version: sparkApps.Version}
	scheme.AddKnownTypeWithName(gv.WithKind("SparkApplication"), &metav1.PartialObjectMetadata{})
	scheme.AddKnownTypeWithName(gv.WithKind("SparkApplicationList"), &metav1.PartialObjectMetadataList{})
	client := metadatafake.NewSimpleMetadataClient(scheme, sparkApp("etl", "u1", alice))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := NewParentsFor(ctx, client)
	// Before the informer has synced, the parent is read by GET.
	got, err := p.Get(ctx, sparkApps, "team-a", "etl", "u1")
	if err != nil || got == nil || got.UID != "u1" || len(got.Annotations) != 1 || got.Annotations[settings.UserInfoAnnotation] == "" {
		t.Fatalf("got %+v %v", got, err)
	}
	inf := p.kinds[sparkApps.GVR()]
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer never synced")
	}
	cached, _, _ := inf.GetStore().GetByKey("team-a/etl")
	if m := cached.(*metav1.PartialObjectMetadata); len(m.Annotations) != 1 || m.Labels != nil {
		t.Fatalf("the cache keeps more than the stamp: %+v", m)
	}
	if got, err := p.Get(ctx, sparkApps, "team-a", "gone", "u2"); got != nil || err != nil {
		t.Fatalf("a missing parent: %+v %v", got, err)
	}
	// Created after the informer synced: found by GET even before its event.
	if _, err := client.Resource(sparkApps.GVR()).Namespace("team-a").(metadatafake.MetadataClient).CreateFake(sparkApp("new", "u3", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, err := p.Get(ctx, sparkApps, "team-a", "new", "u3"); got == nil || err != nil || got.UID != "u3" || got.Annotations != nil {
		t.Fatalf("a new parent: %+v %v", got, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, ok, _ := inf.GetStore().GetByKey("team-a/new"); !ok; _, ok, _ = inf.GetStore().GetByKey("team-a/new") {
		if time.Now().After(deadline) {
			t.Fatal("the informer never saw the new parent")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkParentCache reports what the informer's store keeps for
// 10,000 stamped parents (docs/limits.md).
func BenchmarkParentCache(b *testing.B) {
	stamp := `{"user":"alice@EXAMPLE.COM","groups":["dev.team","data-eng","system:authenticated"]}`
	for range b.N {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		store := cache.NewStore(cache.MetaNamespaceKeyFunc)
		for i := range 10000 {
			// As decoded: every string its own copy; 100 users.
			info := strings.Replace(stamp, "alice", fmt.Sprintf("user-%03d", i%100), 1)
			m := sparkApp(fmt.Sprintf("app-%05d", i), fmt.Sprintf("0b7f6c3e-52a1-4c8e-9d1a-%012d", i), map[string]string{settings.UserInfoAnnotation: info})
			m.Namespace, m.ResourceVersion = strings.Clone("team-a"), "123456"
			k := keep(m, stampKeys)
			_ = store.Add(k)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB/10k")
		runtime.KeepAlive(store)
	}
}

func TestPodParentsByGetNotWatched(t *testing.T) {
	pods := settings.Kind{Version: "v1", Resource: "pods", Kind: "Pod"}
	pod := func(uid string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "driver", Namespace: "team-a", UID: types.UID(uid),
				Annotations: map[string]string{settings.UserInfoAnnotation: `{"user":"alice","groups":[]}`}}}
	}
	scheme := metadatafake.NewTestScheme()
	scheme.AddKnownTypeWithName(schema.GroupVersion{Version: "v1"}.WithKind("Pod"), &metav1.PartialObjectMetadata{})
	client := metadatafake.NewSimpleMetadataClient(scheme, pod("u1"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := NewParentsFor(ctx, client)
	p.Watch(pods)
	gets := func() (n int) {
		for _, a := range client.Actions() {
			if a.GetVerb() == "get" {
				n++
			}
		}
		return n
	}
	for range 3 {
		if got, err := p.Get(ctx, pods, "team-a", "driver", "u1"); got == nil || err != nil || got.UID != "u1" {
			t.Fatalf("got %+v %v", got, err)
		}
	}
	if len(p.kinds) != 0 || gets() != 1 {
		t.Fatalf("pods are read by one GET and never watched: %d informers, %d GETs, actions %v", len(p.kinds), gets(), client.Actions())
	}
	// Another uid than the one kept is read again.
	if got, err := p.Get(ctx, pods, "team-a", "driver", "u2"); err != nil || got == nil || gets() != 2 {
		t.Fatalf("%+v %v, %d GETs", got, err, gets())
	}
}
