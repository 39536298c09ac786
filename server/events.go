package server

import (
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
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/lru"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/auth"
	"github.com/usherhq/usher/internal/clip"
)

// This file holds the denial Events: every admission denial (and every
// denial warn mode admitted) is recorded as a Kubernetes Event on the
// object's namespace, so the people who submit there see why with kubectl
// get events, without access to usher's audit log:
//
//   - involvedObject: the object (kind, apiVersion, namespace, name; for
//     an eviction or a Binding, the Pod), reason: the denial's Cause,
//     message: the message the requester saw, type Warning, reporting
//     controller usher.io/usher, and the annotation usher.io/denial with
//     the denial in its stable shape (admission.Denial as JSON);
//   - never for a dry run (the webhooks are registered with sideEffects
//     NoneOnDryRun), nor for a request usher could not decode;
//   - off the request path and bounded: the review only hands the Event
//     to client-go's record.EventBroadcaster, which queues at most 1000
//     and drops beyond (a full queue never blocks a review), after a
//     rate limit per namespace (a burst of 25 Events, then one every 10
//     seconds; the rest are dropped), so that a burst of denials of
//     distinct objects (a script submitting Jobs by the thousand) does not
//     become as many Events and does not crowd out other namespaces'. A
//     review whose sender was not verified as the API server
//     (admission.Record.Caller; usher serve --webhook-auth report or none,
//     where anyone who reaches usher may have forged it) draws on buckets
//     of its own, half the size: per namespace a burst of 12, then one
//     every 20 seconds, and across all namespaces a burst of 25, then one
//     a second (client-go writes Events at 5 a second), so that forged
//     denials neither use up a namespace's Events nor fill the queue ahead
//     of a verified review's. One goroutine writes them, and its correlator counts repeats of the same
//     denial of the same object on one Event (count, lastTimestamp),
//     combines more than 10 different denials of one object within 10
//     minutes into one Event, and limits each object to a burst of 25
//     writes, then one every 5 minutes.

// DenialEventAnnotation is the annotation of a denial Event that holds the
// denial in its stable shape (admission.Denial as JSON).
const DenialEventAnnotation = "usher.io/denial"

// reportingController names usher on its Events.
const reportingController = "usher.io/usher"

// The rate limit of denial Events, per namespace: a burst of eventBurst,
// then eventQPS a second; unverified reviews have half of each, and a
// burst of unverifiedBurst, then unverifiedQPS a second, across all
// namespaces.
const (
	eventBurst      = 25
	eventQPS        = 0.1
	unverifiedBurst = 25
	unverifiedQPS   = 1
)

// maxEventMessage bounds an Event's message before clip's mark: the API
// server refuses messages over 1 KiB, and the correlator may prefix
// "(combined from similar events): ".
const maxEventMessage = 900

// denialEvents records denials as Events.
type denialEvents struct {
	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder
	// limits holds the eventBuckets of the eventNamespaces most recently
	// seen.
	limits *lru.Cache
	// unverified bounds the Events of unverified reviews in all
	// namespaces together.
	unverified flowcontrol.PassiveRateLimiter
}

// eventBuckets are a namespace's token buckets: for verified reviews, and
// for the others.
type eventBuckets [2]flowcontrol.PassiveRateLimiter

// eventNamespaces bounds the namespaces whose rate limits are kept.
const eventNamespaces = 4096

// newDenialEvents starts a broadcaster that writes Events through client,
// naming this replica instance.
func newDenialEvents(client corev1client.EventsGetter, instance string, log *slog.Logger) *denialEvents {
	// client-go reports dropped and failed Events through a logr logger
	// in the context: to usher's log, not klog's stderr.
	ctx := logr.NewContextWithSlogLogger(context.Background(), log)
	b := record.NewBroadcaster(record.WithContext(ctx))
	// record names an Event after its object ("NAME.<hex time>"), or with
	// a UUID when that is not a valid name: for an object created with
	// generateName, which the record names generateName + "*".
	b.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: client.Events("")})
	return &denialEvents{
		limits:      lru.New(eventNamespaces),
		unverified:  flowcontrol.NewTokenBucketPassiveRateLimiter(unverifiedQPS, unverifiedBurst),
		broadcaster: b,
		recorder: b.NewRecorder(runtime.NewScheme(), corev1.EventSource{Component: reportingController, Host: instance}).
			WithLogger(logr.FromSlogHandler(log.Handler())),
	}
}

// setupDenialEvents records denial Events through the cluster credentials
// (--kubeconfig, or the pod's service account) unless Options.NoDenialEvents;
// without credentials there are none. It only fails for credentials that
// were named and do not load.
func (s *Server) setupDenialEvents() error {
	if s.opts.NoDenialEvents {
		return nil
	}
	switch err := s.kubeErr; {
	case errors.Is(err, auth.ErrNoCluster):
		return nil
	case err != nil && s.opts.Kubeconfig == "":
		s.log.Warn("denial Events are off: the in-cluster configuration is unusable", "err", err)
		return nil
	case err != nil:
		return fmt.Errorf("denial Events: %w", err)
	}
	s.events = newDenialEvents(s.kube.Core, replicaName(), s.log)
	return nil
}

// replicaName names this replica (the pod's POD_NAME, else the host name)
// where usher writes to the cluster: the Host of its Events and the
// instance of its ConfigMap source.
func replicaName() string {
	if name := os.Getenv("POD_NAME"); name != "" {
		return name
	}
	name, _ := os.Hostname()
	return name
}

// withDenialEvents returns the audit hook next, recording an Event for
// every denial first (when Events are on).
func (s *Server) withDenialEvents(next func(admission.Record)) func(admission.Record) {
	if s.events == nil {
		return next
	}
	return func(r admission.Record) {
		s.events.record(r)
		next(r)
	}
}

// record hands the Event of r's denial to the broadcaster; it never
// blocks.
func (e *denialEvents) record(r admission.Record) {
	d := r.Denial
	if d == nil || d.DryRun || d.Reason == admission.CauseInvalidRequest || d.Namespace == "" || d.Kind == "" {
		return
	}
	if !e.allow(d.Namespace, r.Caller == admission.CallerVerified) {
		return
	}
	apiVersion := "v1" // every kind usher reviews is served as v1 in its group
	if d.Group != "" {
		apiVersion = d.Group + "/v1"
	}
	// The names are substrings of the review's body, which the
	// broadcaster's queue must not keep alive: copies.
	ref := &corev1.ObjectReference{Kind: strings.Clone(d.Kind), APIVersion: apiVersion,
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

// allow takes a token of the namespace's bucket for verified reviews, or
// of its bucket for the others and of the one they share. The limit is
// applied before the Event is built and queued, so that a burst in one
// namespace neither costs a copy per dropped denial nor fills the
// broadcaster's queue and crowds out the Events of the others. ns may be
// a substring of the review's body: the cache keeps a copy.
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
