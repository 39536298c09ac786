package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/lru"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/cluster"
	"github.com/usherhq/usher/internal/clip"
)

// DenialEventAnnotation holds a denial Event's admission.Denial as JSON
// (docs/audit.md).
const DenialEventAnnotation = "usher.io/denial"

const (
	reportingController = "usher.io/usher"
	// The rate limits of denial Events per namespace; unverified senders,
	// who may forge denials, have half of them and a shared bucket.
	eventBurst      = 25
	eventQPS        = 0.1
	unverifiedBurst = 25
	unverifiedQPS   = 1
	// maxEventMessage keeps a message under the API server's 1 KiB with the
	// correlator's "(combined from similar events): " prefix.
	maxEventMessage = 900
	eventNamespaces = 4096 // the namespaces whose buckets are kept
)

// denialEvents records every (warned) admission denial as an Event on the
// object's namespace, off the request path: rate limits apply before
// client-go's broadcaster, whose queue drops rather than blocks.
type denialEvents struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	limits      *lru.Cache // eventBuckets of the eventNamespaces last seen
	unverified  flowcontrol.PassiveRateLimiter
}

// eventBuckets are a namespace's token buckets: verified, unverified.
type eventBuckets [2]flowcontrol.PassiveRateLimiter

// newDenialEvents starts a broadcaster that writes Events through client.
func newDenialEvents(client corev1client.EventsGetter, instance string, log *slog.Logger) *denialEvents {
	// client-go's errors go to usher's log, not klog's stderr.
	ctx := logr.NewContextWithSlogLogger(context.Background(), log)
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: client.Events("")})
	return &denialEvents{
		limits:      lru.New(eventNamespaces),
		unverified:  flowcontrol.NewTokenBucketPassiveRateLimiter(unverifiedQPS, unverifiedBurst),
		broadcaster: b,
		recorder: b.NewRecorder(runtime.NewScheme(), corev1.EventSource{Component: reportingController, Host: instance}).
			WithLogger(logr.FromSlogHandler(log.Handler())),
	}
}

// setupDenialEvents turns denial Events on when cluster credentials load,
// failing only for named credentials that do not.
func (s *Server) setupDenialEvents() error {
	if s.opts.NoDenialEvents {
		return nil
	}
	switch err := s.kubeErr; {
	case errors.Is(err, cluster.ErrNoCluster):
		return nil
	case err != nil && s.opts.Kubeconfig == "":
		s.log.Warn("denial Events are off: the in-cluster configuration is unusable", "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("denial Events: %w", err)
	}
	s.events = newDenialEvents(s.kube.CoreV1(), replicaName(), s.log)
	return nil
}

// replicaName names this replica on its Events: POD_NAME, else the host name.
func replicaName() string {
	host, _ := os.Hostname()
	return cmp.Or(os.Getenv("POD_NAME"), host)
}

// record hands the Event of r's denial to the broadcaster (never for a dry
// run or an undecodable request); it never blocks. e may be nil: Events off.
func (e *denialEvents) record(r admission.Record) {
	d := r.Denial
	if e == nil || d == nil || d.DryRun || d.Reason == admission.CauseInvalidRequest || d.Namespace == "" || d.Kind == "" {
		return
	}
	if !e.allow(d.Namespace, r.Caller == admission.CallerVerified) {
		return
	}
	// Copies: the queue must not keep the review's body alive. Every kind
	// usher reviews is served as v1 in its group.
	ref := &corev1.ObjectReference{Kind: strings.Clone(d.Kind), APIVersion: schema.GroupVersion{Group: d.Group, Version: "v1"}.String(),
		Namespace: strings.Clone(d.Namespace), Name: strings.Clone(d.Name)}
	msg := strings.Clone(d.Message)
	if d.Warned {
		msg = "admitted in warn mode: " + msg
	}
	msg = clip.String(msg, maxEventMessage)
	shape, err := json.Marshal(d)
	if err != nil {
		return
	}
	e.recorder.AnnotatedEventf(ref, map[string]string{DenialEventAnnotation: string(shape)}, corev1.EventTypeWarning, string(d.Reason), "%s", msg)
}

// allow takes a token of ns's bucket (and, unverified, the shared one)
// before the Event is built, so that a burst in one namespace does not
// crowd out the others.
func (e *denialEvents) allow(ns string, verified bool) bool {
	v, ok := e.limits.Get(ns)
	if !ok {
		v = &eventBuckets{flowcontrol.NewTokenBucketPassiveRateLimiter(eventQPS, eventBurst),
			flowcontrol.NewTokenBucketPassiveRateLimiter(eventQPS/2, eventBurst/2)}
		e.limits.Add(strings.Clone(ns), v)
	}
	b := v.(*eventBuckets)
	if verified {
		return b[0].TryAccept()
	}
	return b[1].TryAccept() && e.unverified.TryAccept()
}

// shutdown stops the broadcaster; Events still queued are dropped.
func (e *denialEvents) shutdown() {
	if e != nil {
		e.broadcaster.Shutdown()
	}
}
