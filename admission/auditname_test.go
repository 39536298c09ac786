package admission

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/usherhq/usher/admission/settings"
)

// TestCreateAuditNameGenerateName: the API server sends the review of an
// object created with generateName without request.name (the name is
// chosen after admission). The audit record names it generateName + "*",
// for every kind, on both webhooks, allowed or denied.
func TestCreateAuditNameGenerateName(t *testing.T) {
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			var got []Record
			h := NewHandler(mustCompile(t, settings.Config{}), WithAudit(func(r Record) { got = append(got, r) }))
			for _, ann := range []map[string]string{nil, m(UserInfoAnnotation, "not json")} {
				obj := kc.build(nil, ann, nil)
				acc, err := meta.Accessor(obj)
				if err != nil {
					t.Fatal(err)
				}
				acc.SetName("")
				acc.SetGenerateName("spark-driver-")
				for _, hook := range []hookKind{hookMutate, hookValidate} {
					req := request(t, kc, admissionv1.Create, "team-a", alice, obj, nil)
					req.Name = ""
					got = got[:0]
					run(t, h, hook, req)
					if len(got) == 0 {
						t.Fatalf("%s annotation %v: no audit record", hook, ann)
					}
					for _, r := range got {
						if r.Name != "spark-driver-*" {
							t.Fatalf("%s annotation %v: record %+v, want name spark-driver-*", hook, ann, r)
						}
					}
				}
			}
		})
	}
}
