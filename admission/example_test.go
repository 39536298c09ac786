package admission_test

import (
	"fmt"
	"net/http"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/admission/settings"
)

func ExampleHandler_MutateHTTP() {
	// usher serve's State is the generation in service's (serving.Store).
	st := admission.NewState(settings.MustCompile(settings.Config{}), admission.Authorizers{})
	h := admission.NewHandler(func() *admission.State { return st }, admission.WithAudit(func(r admission.Record) {
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
