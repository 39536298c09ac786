package admission_test

import (
	"context"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/admission/settings"
)

func ExampleHandler_Mutate() {
	cfg, err := settings.Config{}.Compile() // the defaults
	if err != nil {
		panic(err)
	}
	h := admission.NewHandler(cfg)
	resp := h.Mutate(context.Background(), &admissionv1.AdmissionRequest{
		UID:       "705ab4f5-6393-11e8-b7cc-42010a800002",
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Namespace: "team-a",
		Operation: admissionv1.Create,
		UserInfo:  authenticationv1.UserInfo{Username: "alice", Groups: []string{"dev", "system:authenticated"}},
		Object: runtimeRaw(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},` +
			`"spec":{"containers":[{"name":"c","image":"busybox"}]}}`),
	})
	fmt.Println(resp.Allowed, *resp.PatchType)
	fmt.Println(string(resp.Patch))
	// Output:
	// true JSONPatch
	// [{"op":"add","path":"/metadata/annotations","value":{"yunikorn.apache.org/user.info":"{\"user\":\"alice\",\"groups\":[\"dev\",\"system:authenticated\"]}"}}]
}

func ExampleHandler_MutateHTTP() {
	h := admission.NewHandler(nil, admission.WithAudit(func(r admission.Record) {
		fmt.Println(r.Webhook, r.Kind, r.User, r.Allowed, r.Reason)
	}))
	mux := http.NewServeMux()
	mux.Handle("POST /mutate", h.MutateHTTP())
	mux.Handle("POST /validate", h.ValidateHTTP())
	// Serve mux over TLS; the API server posts AdmissionReviews to it.
	_ = mux
}

func ExampleParseUserInfo() {
	_, err := admission.ParseUserInfo(`{"username":"joe","groups":["developers"]}`)
	fmt.Println(err)
	u, _ := admission.ParseUserInfo(`{"user":"joe","groups":["developers"]}`)
	fmt.Println(u.User, u.Groups)
	// Output:
	// member "username" is not allowed: the member is "user", not "username"
	// joe [developers]
}

func runtimeRaw(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }
