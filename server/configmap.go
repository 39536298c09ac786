package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/usherhq/usher/cluster"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/internal/clip"
)

// ConfigMapRef names a ConfigMap usher reads its configuration from.
type ConfigMapRef struct{ Namespace, Name string }

func (r ConfigMapRef) String() string { return "configmap/" + r.Namespace + "/" + r.Name }

// ParseConfigMapRef reads NAMESPACE/NAME.
func ParseConfigMapRef(s string) (ConfigMapRef, error) {
	ns, name, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return ConfigMapRef{}, fmt.Errorf("%q: want NAMESPACE/NAME", s)
	}
	return ConfigMapRef{Namespace: ns, Name: name}, nil
}

// cmSource is the configuration read from ConfigMaps: one informer per
// ConfigMap, watching that one object by name, so RBAC may name the
// objects (resourceNames) usher can read.
type cmSource struct {
	refs     []ConfigMapRef // yunikorn-defaults first, then in the order given
	client   corev1client.CoreV1Interface
	instance string // this replica, in Events

	mu      sync.Mutex
	current map[ConfigMapRef]*corev1.ConfigMap // last seen; missing ones absent
	kick    chan struct{}
}

// orderRefs puts yunikorn-defaults first, as YuniKorn merges its two
// ConfigMaps (a later key wins).
func orderRefs(refs []ConfigMapRef) []ConfigMapRef {
	out := slices.Clone(refs)
	slices.SortStableFunc(out, func(a, b ConfigMapRef) int {
		switch {
		case a.Name == config.DefaultsConfigMap && b.Name != config.DefaultsConfigMap:
			return -1
		case b.Name == config.DefaultsConfigMap && a.Name != config.DefaultsConfigMap:
			return 1
		}
		return 0
	})
	return out
}

// newCMSource reads every ConfigMap once; a missing one is empty, as long
// as one exists.
func newCMSource(refs []ConfigMapRef, kube *cluster.Client, kubeErr error) (*cmSource, error) {
	seen := map[ConfigMapRef]bool{}
	for _, r := range refs {
		if seen[r] {
			return nil, fmt.Errorf("--config-map %s/%s given twice", r.Namespace, r.Name)
		}
		seen[r] = true
	}
	if kubeErr != nil {
		return nil, fmt.Errorf("--config-map: %w", kubeErr)
	}
	c := &cmSource{refs: orderRefs(refs), client: kube.CoreV1(), instance: replicaName(),
		current: map[ConfigMapRef]*corev1.ConfigMap{}, kick: make(chan struct{}, 1)}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for _, r := range c.refs {
		cm, err := c.client.ConfigMaps(r.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, fmt.Errorf("reading %s: %w", r, err)
		default:
			c.current[r] = cm
		}
	}
	if len(c.current) == 0 {
		return nil, fmt.Errorf("none of the ConfigMaps %s exists", c.name())
	}
	return c, nil
}

func (c *cmSource) name() string {
	s := make([]string, len(c.refs))
	for i, r := range c.refs {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}

// snapshot returns the objects currently known, in merge order.
func (c *cmSource) snapshot() []*corev1.ConfigMap {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*corev1.ConfigMap, len(c.refs))
	for i, r := range c.refs {
		out[i] = c.current[r]
	}
	return out
}

// merged merges the data of objs (in c.refs order, override in place of
// its own object), naming the ConfigMap holding the partitions and the
// generation: each ConfigMap's resourceVersion.
func (c *cmSource) merged(objs []*corev1.ConfigMap, override *corev1.ConfigMap) (data map[string]string, name string, owner ConfigMapRef, gen string) {
	data = map[string]string{}
	owners := map[string]ConfigMapRef{}
	var versions []string
	for i, r := range c.refs {
		cm := objs[i]
		if override != nil && override.Namespace == r.Namespace && override.Name == r.Name {
			cm = override
		}
		if cm == nil {
			versions = append(versions, r.String()+"@absent")
			continue
		}
		versions = append(versions, r.String()+"@"+cmp.Or(cm.ResourceVersion, "new"))
		maps.Copy(data, cm.Data)
		for k := range cm.Data {
			owners[k] = r
		}
	}
	key := config.QueuesKey
	if g := strings.TrimSpace(data[config.PolicyGroupKey]); g != "" {
		key = g + ".yaml"
	}
	owner, ok := owners[key]
	if !ok {
		owner = c.refs[len(c.refs)-1]
	}
	return data, owner.String(), owner, strings.Join(versions, ",")
}

// object returns the object of r in objs (a snapshot), nil when absent.
func (c *cmSource) object(objs []*corev1.ConfigMap, r ConfigMapRef) *corev1.ConfigMap {
	if i := slices.Index(c.refs, r); i >= 0 {
		return objs[i]
	}
	return nil
}

// run watches the ConfigMaps and reloads on every change until ctx is done.
func (c *cmSource) run(ctx context.Context, reload func()) {
	var wg sync.WaitGroup
	for _, r := range c.refs {
		lw := cache.NewListWatchFromClient(c.client.RESTClient(), "configmaps", r.Namespace,
			fields.OneTermEqualSelector("metadata.name", r.Name))
		inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
		set := func(obj any, deleted bool) {
			c.mu.Lock()
			if cm, ok := obj.(*corev1.ConfigMap); ok && !deleted {
				c.current[r] = cm
			} else {
				delete(c.current, r)
			}
			c.mu.Unlock()
			select {
			case c.kick <- struct{}{}:
			default:
			}
		}
		_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { set(obj, false) },
			UpdateFunc: func(_, obj any) { set(obj, false) },
			DeleteFunc: func(obj any) { set(obj, true) },
		})
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-c.kick:
			reload()
		}
	}
}

// dataSum hashes a ConfigMap's merged data.
func dataSum(data map[string]string) [32]byte {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(data)) {
		fmt.Fprintf(h, "%s\x00%d\x00%s", k, len(data[k]), data[k])
	}
	return [32]byte(h.Sum(nil))
}

// event records an Event on the ConfigMap ref; a failure is only logged.
func (s *Server) event(ref ConfigMapRef, obj *corev1.ConfigMap, typ, reason, msg string) {
	c := s.cm
	msg = clip.String(msg, maxEventMessage)
	now := metav1.NewTime(time.Now())
	involved := corev1.ObjectReference{Kind: "ConfigMap", APIVersion: "v1", Namespace: ref.Namespace, Name: ref.Name}
	if obj != nil {
		involved.UID, involved.ResourceVersion = obj.UID, obj.ResourceVersion
	}
	ev := &corev1.Event{
		ObjectMeta:          metav1.ObjectMeta{GenerateName: ref.Name + ".usher-", Namespace: ref.Namespace},
		InvolvedObject:      involved,
		Reason:              reason,
		Message:             msg,
		Type:                typ,
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Source:              corev1.EventSource{Component: "usher", Host: c.instance},
		ReportingController: reportingController,
		ReportingInstance:   c.instance,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.client.Events(ref.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		s.log.Warn("could not record an Event on the ConfigMap", "configmap", ref.String(), "reason", reason, "err", err)
	}
}

func shortSum(sum [32]byte) string { return hex.EncodeToString(sum[:6]) }
