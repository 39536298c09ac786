package server

import (
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/go-logr/logr"
	arv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	admissionregistrationv1 "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/native"
)

// manageWebhooks, as the leader of the Lease NAME-webhooks, keeps the webhook
// configurations as admission.Registration renders the generation in service:
// applied on every swap, change or deletion of them, and every minute (a
// rotated CA file). It never deletes them; their owner does.
func (s *Server) manageWebhooks(ctx context.Context) {
	lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: s.opts.Webhooks.Namespace, Name: s.opts.Webhooks.Name + "-webhooks"},
		Client: s.kube.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: replicaName() + "_" + string(uuid.NewUUID())}}
	ctx = logr.NewContextWithSlogLogger(ctx, s.log) // client-go logs to usher's log
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{Lock: lock, Name: lock.LeaseMeta.Name, ReleaseOnCancel: true,
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(ctx context.Context) { s.reconcileWebhooks(ctx) }, OnStoppedLeading: func() {}}})
	}
}

// kickWebhooks asks the reconciler, if any, to apply again.
func (s *Server) kickWebhooks() {
	select {
	case s.webhookKick <- struct{}{}:
	default:
	}
}

func (s *Server) reconcileWebhooks(ctx context.Context) {
	s.log.Info("webhooks: leading; registering the webhook configurations", "lease", s.opts.Webhooks.Name+"-webhooks")
	f := informers.NewSharedInformerFactoryWithOptions(s.kube, time.Minute, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = "app.kubernetes.io/managed-by=" + admission.ManagedBy
	}))
	kick := func(any) { s.kickWebhooks() }
	h := cache.ResourceEventHandlerFuncs{AddFunc: kick, UpdateFunc: func(_, o any) { kick(o) }, DeleteFunc: kick}
	f.Admissionregistration().V1().MutatingWebhookConfigurations().Informer().AddEventHandler(h)
	f.Admissionregistration().V1().ValidatingWebhookConfigurations().Informer().AddEventHandler(h)
	f.Start(ctx.Done())
	defer f.Shutdown()
	s.kickWebhooks()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.webhookKick:
		}
		if err := s.applyWebhooks(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("webhooks: apply failed; retrying in 5s", "err", err)
			time.AfterFunc(5*time.Second, s.kickWebhooks)
		}
	}
}

// applyWebhooks applies (server-side, taking over every field it sets)
// the configurations for the generation in service.
func (s *Server) applyWebhooks(ctx context.Context) error {
	in := s.opts.Webhooks
	var err error
	if in.CABundleFile != "" {
		if in.CABundle, err = os.ReadFile(in.CABundleFile); err != nil {
			return err
		}
	}
	cfg := s.serving.Current().Config() // one generation for the webhooks and the floor
	m, v := admission.Registration(cfg.Admission.Config(), in)
	if s.opts.WebhookOwner != "" {
		owner, err := s.kube.RbacV1().ClusterRoles().Get(ctx, s.opts.WebhookOwner, metav1.GetOptions{})
		if err != nil {
			return err
		}
		refs := []metav1.OwnerReference{{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: owner.Name, UID: owner.UID}}
		m.OwnerReferences, v.OwnerReferences = refs, refs
	}
	force := true
	opts := metav1.PatchOptions{FieldManager: "usher", Force: &force}
	api := s.kube.AdmissionregistrationV1()
	mdata, _ := json.Marshal(m)
	vdata, _ := json.Marshal(v)
	got, err := api.MutatingWebhookConfigurations().Patch(ctx, m.Name, types.ApplyPatchType, mdata, opts)
	if err != nil {
		return err
	}
	gotV, err := api.ValidatingWebhookConfigurations().Patch(ctx, v.Name, types.ApplyPatchType, vdata, opts)
	if err != nil {
		return err
	}
	if rv := got.ResourceVersion + "/" + gotV.ResourceVersion; rv != s.webhookRV {
		s.webhookRV = rv
		s.log.Info("webhooks: registered", "mutating", m.Name, "validating", v.Name, "resourceVersions", rv)
	}
	if s.opts.NativeFloor {
		return s.applyFloor(ctx, api, cfg, m.Webhooks[0].NamespaceSelector, m.OwnerReferences, opts)
	}
	return nil
}

// applyFloor applies cfg's native floor bound to the namespaces sel selects;
// a floor that only guards removes the stamping policy applied before.
func (s *Server) applyFloor(ctx context.Context, api admissionregistrationv1.AdmissionregistrationV1Interface, cfg *config.Config,
	sel *metav1.LabelSelector, refs []metav1.OwnerReference, opts metav1.PatchOptions) error {
	f, err := native.Compile(cfg.Admission, cfg.FloorStamps())
	if err != nil { // until the configuration changes: retrying cannot help
		s.log.Error("webhooks: the native floor is not applied", "err", err)
		return nil
	}
	name := s.opts.Webhooks.Name + "-floor"
	f.Bind(name, sel, s.opts.Webhooks.MatchConditions)
	for _, o := range f.Objects() {
		o.(metav1.Object).SetOwnerReferences(refs)
		data, _ := json.Marshal(o)
		var err error
		switch o.(type) {
		case *arv1.ValidatingAdmissionPolicy:
			_, err = api.ValidatingAdmissionPolicies().Patch(ctx, name, types.ApplyPatchType, data, opts)
		case *arv1.ValidatingAdmissionPolicyBinding:
			_, err = api.ValidatingAdmissionPolicyBindings().Patch(ctx, name, types.ApplyPatchType, data, opts)
		case *arv1.MutatingAdmissionPolicy:
			_, err = api.MutatingAdmissionPolicies().Patch(ctx, name, types.ApplyPatchType, data, opts)
		case *arv1.MutatingAdmissionPolicyBinding:
			_, err = api.MutatingAdmissionPolicyBindings().Patch(ctx, name, types.ApplyPatchType, data, opts)
		}
		if err != nil {
			return err
		}
	}
	if f.Mutating == nil {
		for _, del := range []func(context.Context, string, metav1.DeleteOptions) error{api.MutatingAdmissionPolicyBindings().Delete, api.MutatingAdmissionPolicies().Delete} {
			if err := del(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}
