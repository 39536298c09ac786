package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/usherhq/usher/config"
)

// maxAdmissionWarnings caps the warnings returned to kubectl; the API
// server also truncates them.
const maxAdmissionWarnings = 20

// serveValidateConfig is the validating webhook of usher's ConfigMap
// (/validate-config): it runs the configuration pipeline usher serve and
// usher lint run on the ConfigMap being written and refuses it with the
// same FILE:LINE:COL diagnostics (the file being configmap/NS/NAME/KEY),
// or admits it with the lint warnings as admission warnings, which
// kubectl prints. With --config-map, a ConfigMap usher does not read is
// admitted untouched, and a change of one of YuniKorn's two ConfigMaps is
// checked merged with the other as usher would serve it. Deletion is
// admitted: usher keeps serving the last good configuration.
func (s *Server) serveValidateConfig(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	// limitBody passes a body declared larger than the cap on unread: it
	// is refused here, and one of unknown length is cut at the cap.
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
	resp := s.reviewConfig(req)
	resp.UID = req.UID
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	if out.APIVersion == "" {
		out.APIVersion, out.Kind = "admission.k8s.io/v1", "AdmissionReview"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (s *Server) reviewConfig(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Kind.Kind != "ConfigMap" || req.Kind.Group != "" {
		return allow
	}
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		if req.Operation == admissionv1.Delete {
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
	var cfg *config.Config
	var err error
	name := ConfigMapRef{Namespace: cm.Namespace, Name: cm.Name}.String()
	if s.cm != nil {
		if _, ok := s.cm.ref(cm.Namespace, cm.Name); !ok {
			return allow // not usher's: the registration should not send it
		}
		cm.ResourceVersion = "" // the change under review
		var gen string
		cfg, _, gen, _, err = s.loadConfigMaps(s.cm.snapshot(), &cm)
		name = gen
	} else {
		cfg, err = config.FromConfigMap(name, cm.Data, config.WithEnv(s.opts.Getenv))
	}
	if err != nil {
		s.log.Info("configuration change refused at admission", "configmap", name, "user", req.UserInfo.Username, "err", err)
		resp := deny(http.StatusUnprocessableEntity, "usher: configuration refused; the configuration in service is unchanged:\n"+err.Error())
		if inv, ok := err.(*config.InvalidError); ok {
			resp.Warnings = warnings(inv.Warnings)
		}
		return resp
	}
	allow.Warnings = warnings(cfg.Warnings)
	return allow
}

func deny(code int32, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: metav1.StatusReasonInvalid, Message: msg,
	}}
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
