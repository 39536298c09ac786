// Package doctor checks a usher installation from outside, as usher doctor
// runs it: each check reads the cluster on its own (one failing does not
// stop the others) and says ok, warn or fail, with a fix.
package doctor

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/pager"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/config"
)

// Status is a check's outcome.
type Status string

// The outcomes, from good to bad.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Check is what one check found, and how to fix it.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

// Install names the installation: usher's namespace, the Helm release
// ("usher" for deploy/), and a namespace usher governs, where the API
// server's call of the webhooks is probed with a dry-run pod.
type Install struct{ Namespace, Release, ProbeNamespace string }

// Name is the base name of usher's objects, as the chart names them: the
// release when it contains "usher", else RELEASE-usher.
func (in Install) Name() string {
	if strings.Contains(in.Release, "usher") {
		return in.Release
	}
	return in.Release + "-usher"
}

// hook is one webhook of usher's configurations.
type hook struct {
	name   string
	ignore bool
	cc     admissionregistrationv1.WebhookClientConfig
}

type run struct {
	kube  kubernetes.Interface
	meta  metadata.Interface
	in    Install
	pod   corev1.PodSpec // of usher's Deployment
	hooks []hook
	certs []*x509.Certificate
	cfg   *config.Config
}

// Run runs every check, in order.
func Run(ctx context.Context, kube kubernetes.Interface, meta metadata.Interface, in Install) []Check {
	r := &run{kube: kube, meta: meta, in: in}
	return []Check{r.callers(ctx), r.webhooks(ctx), r.caBundles(ctx), r.expiry(), r.service(ctx),
		r.configuration(ctx), r.rbac(ctx), r.reach(ctx), r.parents(ctx)}
}

// parents lists the propagators' parents without user.info in the namespaces
// usher processes: made before their kind was governed, what propagators make
// from them gets the propagator's identity or is denied (unstampedParents).
func (r *run) parents(ctx context.Context) Check {
	c := Check{Name: "unstamped-parents", Status: OK}
	if r.cfg == nil {
		c.Status, c.Detail = Warn, "not checked: the configuration did not load"
		return c
	}
	a, seen := r.cfg.Admission, map[schema.GroupVersionResource]bool{}
	var found []string
	for _, p := range a.Propagators {
		for _, k := range p.Parents {
			if seen[k.GVR()] {
				continue
			}
			seen[k.GVR()] = true
			list := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
				return r.meta.Resource(k.GVR()).List(ctx, opts)
			})
			err := list.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
				o := obj.(*metav1.PartialObjectMetadata)
				if _, ok := o.Annotations[settings.UserInfoAnnotation]; !ok && a.ProcessNamespace(o.Namespace) {
					found = append(found, k.Kind+" "+o.Namespace+"/"+o.Name)
				}
				return nil
			})
			if err != nil {
				c.Status, c.Detail = Warn, fmt.Sprintf("cannot list %s: %v", k.Resource, err)
				return c
			}
		}
	}
	c.Detail = fmt.Sprintf("every parent of %d kinds carries user.info", len(seen))
	if len(found) > 0 {
		c.Status, c.Detail = Warn, fmt.Sprintf("%d parents carry no user.info: %s", len(found), strings.Join(found[:min(len(found), 5)], ", "))
		c.Fix = "they were made before usher governed their kind: what propagators make from them runs as the propagator " +
			"(unstampedParents: propagatorIdentity) or is denied (deny); let them finish, or recreate them (docs/operators.md)"
	}
	return c
}

func (r *run) fixInstall(what string) string {
	return fmt.Sprintf("helm upgrade %s deploy/chart/usher -n %s --reuse-values, or kubectl apply -f deploy/%s", r.in.Release, r.in.Namespace, what)
}

// flag returns the values of --name in the args of the Deployment's
// containers, in order.
func (r *run) flag(name string) []string {
	var out []string
	for _, c := range r.pod.Containers {
		for i, a := range c.Args {
			if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
				out = append(out, v)
			} else if a == "--"+name && i+1 < len(c.Args) {
				out = append(out, c.Args[i+1])
			}
		}
	}
	return out
}

func (r *run) callers(ctx context.Context) Check {
	c := Check{Name: "webhook-callers", Status: OK}
	dep, err := r.kube.AppsV1().Deployments(r.in.Namespace).Get(ctx, r.in.Name(), metav1.GetOptions{})
	if err != nil {
		c.Status, c.Detail, c.Fix = Fail, fmt.Sprintf("deployment %s/%s: %v", r.in.Namespace, r.in.Name(), err), r.fixInstall("deployment.yaml")
		return c
	}
	r.pod = dep.Spec.Template.Spec
	mode := "client-cert"
	if m := r.flag("webhook-auth"); len(m) > 0 {
		mode = m[len(m)-1]
	}
	c.Detail = "--webhook-auth " + mode
	if mode != "client-cert" {
		c.Status, c.Detail = Warn, c.Detail+": the webhooks answer any caller, not only the API server"
		c.Fix = "give the API server a client certificate (docs/security.md) and set --webhook-auth=client-cert --webhook-client-ca=FILE"
	}
	return c
}

// webhooks finds usher's webhook configurations: named as usher, labelled
// with the release, or with a webhook calling usher's Service.
func (r *run) webhooks(ctx context.Context) Check {
	c := Check{Name: "webhook-configurations", Status: Fail, Fix: r.fixInstall("webhooks.yaml")}
	muts, err1 := r.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	vals, err2 := r.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	if err := errors.Join(err1, err2); err != nil {
		c.Detail = err.Error()
		return c
	}
	var found []string
	add := func(kind string, m metav1.ObjectMeta, hs []hook) {
		if m.Name == r.in.Name() || m.Labels["app.kubernetes.io/instance"] == r.in.Release || slices.ContainsFunc(hs, func(h hook) bool {
			return h.cc.Service != nil && h.cc.Service.Namespace == r.in.Namespace && h.cc.Service.Name == r.in.Name()
		}) {
			found = append(found, kind+"/"+m.Name)
			r.hooks = append(r.hooks, hs...)
		}
	}
	// validate-config fails open by design.
	mk := func(name string, fp *admissionregistrationv1.FailurePolicyType, cc admissionregistrationv1.WebhookClientConfig) hook {
		return hook{name, fp != nil && *fp == admissionregistrationv1.Ignore && !strings.HasPrefix(name, "validate-config."), cc}
	}
	for _, w := range muts.Items {
		var hs []hook
		for _, h := range w.Webhooks {
			hs = append(hs, mk(h.Name, h.FailurePolicy, h.ClientConfig))
		}
		add("mutatingwebhookconfiguration", w.ObjectMeta, hs)
	}
	mutating := len(found)
	for _, w := range vals.Items {
		var hs []hook
		for _, h := range w.Webhooks {
			hs = append(hs, mk(h.Name, h.FailurePolicy, h.ClientConfig))
		}
		add("validatingwebhookconfiguration", w.ObjectMeta, hs)
	}
	c.Detail = strings.Join(found, ", ")
	switch {
	case mutating == 0 || mutating == len(found):
		c.Detail = fmt.Sprintf("no mutating and validating webhook configurations of %q (found: %q): pods are admitted unchecked", r.in.Name(), found)
	case slices.ContainsFunc(r.hooks, func(h hook) bool { return h.ignore }):
		c.Status, c.Detail = Warn, c.Detail+": a workload webhook has failurePolicy Ignore (break glass still in force?): usher's outage admits pods unchecked"
	default:
		c.Status, c.Fix = OK, ""
	}
	return c
}

// caBundles verifies each webhook's caBundle against the certificate usher
// serves: fetched from its URL, or read from the Secret the Deployment mounts.
func (r *run) caBundles(ctx context.Context) Check {
	c := Check{Name: "ca-bundles", Status: OK}
	var bad, warn []string
	for _, h := range r.hooks {
		chain, host, err := r.served(ctx, h.cc)
		if err != nil {
			warn = append(warn, fmt.Sprintf("%s: %v", h.name, err))
			continue
		}
		r.certs = append(r.certs, chain[0])
		roots, inter := x509.NewCertPool(), x509.NewCertPool()
		for _, ic := range chain[1:] {
			inter.AddCert(ic)
		}
		if !roots.AppendCertsFromPEM(h.cc.CABundle) {
			bad = append(bad, h.name+": no certificate in its caBundle")
		} else if _, err := chain[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter}); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", h.name, err))
		}
	}
	switch {
	case len(r.hooks) == 0:
		c.Status, c.Detail = Warn, "no webhook to check"
	case len(bad) > 0:
		c.Status, c.Detail = Fail, "the caBundle does not verify the serving certificate: "+strings.Join(append(bad, warn...), "; ")
		c.Fix = fmt.Sprintf("cert-manager: kubectl -n %s get certificate (Ready?) and the cainjector; otherwise put the CA that signed the serving certificate in every caBundle (%s)",
			r.in.Namespace, r.fixInstall("webhooks.yaml"))
	case len(warn) > 0:
		c.Status, c.Detail = Warn, "serving certificate not checked: "+strings.Join(warn, "; ")
		c.Fix = "run usher doctor as a user who may read usher's Secrets, from where the webhook URLs are reachable"
	default:
		c.Detail = fmt.Sprintf("%d webhooks: the caBundle verifies the certificate usher serves", len(r.hooks))
	}
	return c
}

// served returns the certificate chain usher presents to the API server
// for cc, and the name the API server checks.
func (r *run) served(ctx context.Context, cc admissionregistrationv1.WebhookClientConfig) ([]*x509.Certificate, string, error) {
	if cc.URL != nil {
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return nil, "", err
		}
		host := cmp.Or(u.Port(), "443")
		d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: &tls.Config{InsecureSkipVerify: true}} // verified by the caller
		conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), host))
		if err != nil {
			return nil, "", err
		}
		defer conn.Close()
		return conn.(*tls.Conn).ConnectionState().PeerCertificates, u.Hostname(), nil
	}
	name := r.in.Name() + "-tls"
	if i := slices.IndexFunc(r.pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil }); i >= 0 {
		name = r.pod.Volumes[i].Secret.SecretName
	}
	s, err := r.kube.CoreV1().Secrets(r.in.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	b, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	if b == nil {
		return nil, "", fmt.Errorf("secret %s/%s: no certificate in %s", r.in.Namespace, name, corev1.TLSCertKey)
	}
	crt, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil, "", err
	}
	return []*x509.Certificate{crt}, cc.Service.Name + "." + cc.Service.Namespace + ".svc", nil
}

func (r *run) expiry() Check {
	c := Check{Name: "certificate-expiry", Status: OK}
	if len(r.certs) == 0 {
		c.Status, c.Detail = Warn, "no serving certificate read (see ca-bundles)"
		return c
	}
	first := slices.MinFunc(r.certs, func(a, b *x509.Certificate) int { return a.NotAfter.Compare(b.NotAfter) })
	left := time.Until(first.NotAfter)
	c.Detail = fmt.Sprintf("the serving certificate expires %s (%d days)", first.NotAfter.UTC().Format(time.RFC3339), int(left.Hours()/24))
	if left < 30*24*time.Hour {
		c.Status = Warn
		if left <= 0 {
			c.Status = Fail
		}
		c.Fix = fmt.Sprintf("renew it: cert-manager renews (kubectl -n %s get certificate); chart certificates.mode helm: helm upgrade %s re-issues it; your own Secret: replace it", r.in.Namespace, r.in.Release)
	}
	return c
}

func (r *run) service(ctx context.Context) Check {
	c := Check{Name: "service", Status: Fail,
		Fix: fmt.Sprintf("kubectl -n %s get pods -l app.kubernetes.io/name=usher; kubectl -n %s describe deployment %s", r.in.Namespace, r.in.Namespace, r.in.Name())}
	if _, err := r.kube.CoreV1().Services(r.in.Namespace).Get(ctx, r.in.Name(), metav1.GetOptions{}); err != nil {
		c.Detail, c.Fix = err.Error(), r.fixInstall("service.yaml")
		return c
	}
	eps, err := r.kube.DiscoveryV1().EndpointSlices(r.in.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + r.in.Name()})
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	ready, all := 0, 0
	for _, s := range eps.Items {
		for _, e := range s.Endpoints {
			all++
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				ready++
			}
		}
	}
	c.Detail = fmt.Sprintf("service %s/%s: %d of %d endpoints ready", r.in.Namespace, r.in.Name(), ready, all)
	if ready > 0 {
		c.Status, c.Fix = OK, ""
	}
	return c
}

// configMaps are the ConfigMaps usher serves (--config-map; else the
// chart's NAME-config), yunikorn-defaults first as usher merges them.
func (r *run) configMaps() [][2]string {
	var refs [][2]string
	for _, v := range r.flag("config-map") {
		for _, p := range strings.Split(v, ",") {
			if ns, name, ok := strings.Cut(strings.TrimSpace(p), "/"); ok {
				refs = append(refs, [2]string{ns, name})
			}
		}
	}
	if len(refs) == 0 {
		refs = [][2]string{{r.in.Namespace, r.in.Name() + "-config"}}
	}
	slices.SortStableFunc(refs, func(a, b [2]string) int { // "true" (yunikorn-defaults) first
		return strings.Compare(fmt.Sprint(b[1] == config.DefaultsConfigMap), fmt.Sprint(a[1] == config.DefaultsConfigMap))
	})
	return refs
}

// configuration loads the ConfigMaps as usher serve and usher lint do, with
// the ADMISSION_CONTROLLER_* variables the Deployment sets.
func (r *run) configuration(ctx context.Context) Check {
	c := Check{Name: "configuration", Status: Fail}
	data, env, name := map[string]string{}, map[string]string{}, ""
	for _, ref := range r.configMaps() {
		name = "configmap/" + ref[0] + "/" + ref[1]
		c.Fix = fmt.Sprintf("kubectl -n %s get configmap %s -o yaml > cm.yaml && usher lint cm.yaml, then fix and kubectl apply -f cm.yaml", ref[0], ref[1])
		cm, err := r.kube.CoreV1().ConfigMaps(ref[0]).Get(ctx, ref[1], metav1.GetOptions{})
		if err != nil {
			c.Detail = err.Error()
			return c
		}
		maps.Copy(data, cm.Data)
	}
	for _, ct := range r.pod.Containers {
		for _, e := range ct.Env {
			env[e.Name] = e.Value
		}
	}
	cfg, err := config.FromConfigMap(name, data, config.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))
	if err != nil {
		c.Detail = err.Error()
		return c
	}
	r.cfg = cfg
	c.Status, c.Detail, c.Fix = OK, name+" loads", ""
	if n := len(cfg.Warnings); n > 0 {
		c.Status, c.Detail = Warn, fmt.Sprintf("%s loads with %d warnings, the first: %s", name, n, cfg.Warnings[0])
	}
	return c
}

// rbac asks the API server whether usher's service account holds what
// the features the Deployment and the configuration turn on need.
func (r *run) rbac(ctx context.Context) Check {
	sa := cmp.Or(r.pod.ServiceAccountName, r.in.Name())
	type need struct{ why, verb, group, resource, ns, name string }
	needs := []need{}
	if !slices.ContainsFunc(r.pod.Containers, func(c corev1.Container) bool {
		return slices.Contains(c.Args, "--no-denial-events") || slices.Contains(c.Args, "--no-denial-events=true")
	}) {
		needs = append(needs, need{"denial Events", "create", "", "events", "", ""})
	}
	if auth := strings.Join(r.flag("access-auth"), ","); auth == "" || strings.Contains(auth, "kubernetes") || strings.Contains(auth, "auto") {
		needs = append(needs, need{"callers of /v1/access and /metrics", "create", "authentication.k8s.io", "tokenreviews", "", ""},
			need{"callers of /v1/access and /metrics", "create", "authorization.k8s.io", "subjectaccessreviews", "", ""})
	}
	for _, ref := range r.configMaps() {
		for _, v := range []string{"get", "list", "watch"} {
			needs = append(needs, need{"its configuration", v, "", "configmaps", ref[0], ref[1]})
		}
		needs = append(needs, need{"Events on its configuration", "create", "", "events", ref[0], ""})
	}
	if r.cfg != nil && r.cfg.Admission.EnforceDelete {
		for _, w := range settings.Workloads[1:] { // after Pod: the owners the adoption rule reads
			needs = append(needs, need{"enforceDeleteACLs' adoption rule", "get", w.Group, w.Resource, "", ""})
		}
	}
	if r.cfg != nil {
		for _, p := range r.cfg.Admission.Propagators {
			for _, k := range p.Parents {
				for _, v := range []string{"get", "list", "watch"} {
					needs = append(needs, need{"propagators' parents", v, k.Group, k.Resource, "", ""})
				}
			}
		}
	}
	user := "system:serviceaccount:" + r.in.Namespace + ":" + sa
	c := Check{Name: "rbac", Status: OK, Detail: fmt.Sprintf("%s holds the %d permissions its features need", user, len(needs))}
	var missing []string
	for _, n := range needs {
		sar, err := r.kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + r.in.Namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: n.verb, Group: n.group, Resource: n.resource, Namespace: n.ns, Name: n.name},
		}}, metav1.CreateOptions{})
		if err != nil {
			c.Status, c.Detail, c.Fix = Warn, "cannot ask the API server: "+err.Error(), "run usher doctor as a user who may create subjectaccessreviews"
			return c
		}
		if !sar.Status.Allowed {
			missing = append(missing, fmt.Sprintf("%s %s/%s in %q (%s)", n.verb, n.group, n.resource, n.ns, n.why))
		}
	}
	if len(missing) > 0 {
		c.Status, c.Detail, c.Fix = Fail, user+" may not "+strings.Join(missing, "; "), r.fixInstall("rbac.yaml")
	}
	return c
}

// reach creates a pod in the probe namespace in a server-side dry run:
// usher's stamp on it, or usher's denial, shows the API server calls
// usher; "failed calling webhook" shows it cannot.
func (r *run) reach(ctx context.Context) Check {
	ns := r.in.ProbeNamespace
	c := Check{Name: "api-server-reaches-webhook", Status: OK}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "usher-doctor-"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "registry.k8s.io/pause:3.10"}}}}
	p, err := r.kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	mine := slices.ContainsFunc(r.hooks, func(h hook) bool { return err != nil && strings.Contains(err.Error(), fmt.Sprintf("%q", h.name)) })
	switch {
	case mine && strings.Contains(err.Error(), "failed calling webhook"):
		c.Status, c.Detail = Fail, err.Error()
		c.Fix = "see the service and ca-bundles checks; to let pods in meanwhile: docs/troubleshooting.md, \"Break glass\""
	case mine:
		c.Detail = "usher answered a dry-run pod in " + ns + ": " + err.Error()
	case err != nil:
		c.Status, c.Detail, c.Fix = Warn, "dry-run pod in "+ns+": "+err.Error(), "--probe-namespace NS: a namespace usher governs where you may create pods"
	case p.Annotations[settings.UserInfoAnnotation] != "":
		c.Detail = fmt.Sprintf("usher stamped a dry-run pod in %s: %s", ns, p.Annotations[settings.UserInfoAnnotation])
	default:
		c.Status, c.Detail = Warn, "a dry-run pod in "+ns+" came back without usher's stamp: usher's webhooks skip that namespace"
		c.Fix = "--probe-namespace NS: a namespace usher governs"
	}
	return c
}
