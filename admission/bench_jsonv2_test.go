//go:build goexperiment.jsonv2

package admission

import (
	jsonv2 "encoding/json/v2"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
)

// BenchmarkStdlibV2Decode is BenchmarkStdlibDecode with encoding/json/v2
// (GOEXPERIMENT=jsonv2): the same review into the k8s types plus the
// metadata-only view of the pod. Run it with
//
//	GOEXPERIMENT=jsonv2 go test -run '^$' -bench 'StdlibV2Decode' -benchmem ./admission
func BenchmarkStdlibV2Decode(b *testing.B) {
	body := podReviewBody(b)
	type meta struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
	}
	type pod struct {
		APIVersion string    `json:"apiVersion"`
		Kind       string    `json:"kind"`
		Metadata   *meta     `json:"metadata"`
		Spec       *struct{} `json:"spec"`
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	cpu := cpuTime()
	defer reportCPU(b, cpu)
	for b.Loop() {
		var rv admissionv1.AdmissionReview
		if err := jsonv2.Unmarshal(body, &rv); err != nil {
			b.Fatal(err)
		}
		var p pod
		if err := jsonv2.Unmarshal(rv.Request.Object.Raw, &p); err != nil {
			b.Fatal(err)
		}
	}
}
