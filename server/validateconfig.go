package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/usherhq/usher/config"
)

const (
	maxAdmissionWarnings = 20      // returned to kubectl
	maxConfigMapData     = 1 << 20 // what etcd holds; larger is refused unparsed
	// maxReviewNodes caps the YAML nodes config.NodeBound counts before
	// parsing, so a parse holds at most about 57 MiB (docs/limits.md).
	maxReviewNodes = 300_000
	nodeCost       = 96 // charged to the body budget per node counted, half of a parsed node's
)

// serveValidateConfig is /validate-config: it loads the ConfigMap being
// written as usher serve would (config.InRequest) and refuses it with the
// diagnostics, or admits it with the lint warnings.
func (s *Server) serveValidateConfig(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	if r.ContentLength > s.opts.MaxReviewBody {
		http.Error(w, "the AdmissionReview is larger than the body limit", http.StatusRequestEntityTooLarge)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, s.opts.MaxReviewBody)).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "the body is not an AdmissionReview with a request", http.StatusBadRequest)
		return
	}
	req := review.Request
	resp := s.reviewConfig(r.Context(), req)
	if resp == nil {
		s.metrics.shed.WithLabelValues("validate-config", "memory").Inc()
		s.shed(w)
		return
	}
	resp.UID = req.UID
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion, out.Kind = "admission.k8s.io/v1", "AdmissionReview"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// reviewConfig decides about the ConfigMap of req; nil when the memory to
// parse it cannot be had.
func (s *Server) reviewConfig(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Kind.Kind != "ConfigMap" || req.Kind.Group != "" {
		return allow
	}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		a, u := s.serving.Current().Config().Admission, req.UserInfo
		switch ours := s.cm == nil || slices.Contains(s.cm.refs, ConfigMapRef{Namespace: req.Namespace, Name: req.Name}); {
		case req.Operation != admissionv1.Delete:
		case ours && s.enforcesDelegation(a) && !a.TrustedSetter(u.Username, u.Groups):
			return forbid(fmt.Sprintf("usher: user %q may not delete the ConfigMap (delegatedAdministration, docs/delegated-administration.md): "+
				"YuniKorn falls back to its defaults, which changes every queue; only trusted setters may", u.Username))
		default:
			allow.Warnings = []string{"usher keeps serving the configuration it last loaded from this ConfigMap"}
		}
		return allow
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(req.Object.Raw, &cm); err != nil {
		return deny(http.StatusBadRequest, "usher: the object is not a ConfigMap: "+err.Error())
	}
	if cm.Namespace == "" {
		cm.Namespace = req.Namespace
	}
	if cm.Name == "" {
		cm.Name = req.Name
	}
	ref := ConfigMapRef{Namespace: cm.Namespace, Name: cm.Name}
	if s.cm != nil && !slices.Contains(s.cm.refs, ref) {
		return allow // not usher's: the registration should not send it
	}
	size := 0
	for k, v := range cm.Data {
		size += len(k) + len(v)
	}
	for k, v := range cm.BinaryData {
		size += len(k) + len(v)
	}
	if size > maxConfigMapData {
		return deny(http.StatusRequestEntityTooLarge, fmt.Sprintf("usher: configuration refused: the ConfigMap's data is %d bytes, larger than the %d bytes a ConfigMap can hold", size, maxConfigMapData))
	}
	nodes := 0
	for _, v := range cm.Data {
		nodes += config.NodeBound(v)
	}
	if nodes > maxReviewNodes {
		return deny(http.StatusRequestEntityTooLarge, fmt.Sprintf("usher: configuration refused: its data may hold up to %d YAML nodes (counted before parsing), more than the %d a ConfigMap under review may hold", nodes, maxReviewNodes))
	}
	release, ok := s.reserveParse(ctx, int64(nodes)*nodeCost)
	if !ok {
		return nil
	}
	defer release()
	data, name := cm.Data, ref.String()
	if s.cm != nil {
		cm.ResourceVersion = "" // the change under review
		data, name, _, _ = s.cm.merged(s.cm.snapshot(), &cm)
	}
	cur := s.serving.Current()
	cfg, err := config.FromConfigMap(name, data, config.WithEnv(s.opts.Getenv), config.InRequest(cur.Config()))
	if err != nil {
		s.log.Info("configuration change refused at admission", "configmap", name, "user", req.UserInfo.Username, "err", err)
		resp := deny(http.StatusUnprocessableEntity, "usher: configuration refused; the configuration in service is unchanged:\n"+err.Error())
		if inv, ok := err.(*config.InvalidError); ok {
			resp.Warnings = warnings(inv.Warnings)
		}
		return resp
	}
	allow.Warnings = warnings(cfg.Warnings)
	warn, denied := s.delegation(ctx, cur, cfg, name, req.UserInfo)
	if denied {
		return forbid(warn[0])
	}
	allow.Warnings = append(allow.Warnings, warn...)
	if s.opts.RefuseConfigWarnings && len(cfg.Warnings) > 0 {
		s.log.Info("configuration change refused at admission for its warnings", "configmap", name, "user", req.UserInfo.Username, "warnings", len(cfg.Warnings))
		return deny(http.StatusUnprocessableEntity, "usher: configuration refused: usher serve --validate-config-warnings=refuse refuses warnings too; the configuration in service is unchanged:\n"+
			strings.Join(allow.Warnings, "\n"))
	}
	return allow
}

// reserveParse waits for the one parse at a time, then charges cost to
// the shared body budget; false when it cannot or ctx ends.
func (s *Server) reserveParse(ctx context.Context, cost int64) (release func(), ok bool) {
	if s.parsing.Acquire(ctx, 1) != nil {
		return nil, false
	}
	if !s.bodies.shared.tryTake(cost) {
		s.parsing.Release(1)
		return nil, false
	}
	return func() { s.bodies.shared.give(cost); s.parsing.Release(1) }, true
}

func deny(code int32, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: metav1.StatusReasonInvalid, Message: msg,
	}}
}

// forbid is deny for a writer who may not make the change: 403, reason Forbidden.
func forbid(msg string) *admissionv1.AdmissionResponse {
	resp := deny(http.StatusForbidden, msg)
	resp.Result.Reason = metav1.StatusReasonForbidden
	return resp
}

func warnings(ds []config.Diagnostic) []string {
	var out []string
	for i, d := range ds {
		if i == maxAdmissionWarnings {
			out = append(out, fmt.Sprintf("and %d more warnings: run usher lint", len(ds)-i))
			break
		}
		out = append(out, d.String())
	}
	return out
}
