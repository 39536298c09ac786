package admission

import (
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
)

// OtherLabel is the metric label of a kind or operation the webhook does not know.
const OtherLabel = "other"

// MetricKind returns a handled kind, "" or OtherLabel, so that an invented
// kind cannot create a metric series kept forever.
func MetricKind(kind string) string {
	if kind == "" || slices.ContainsFunc(kinds[:], func(k kindInfo) bool { return k.kind == kind }) {
		return kind
	}
	return OtherLabel
}

// MetricOperation returns an admission operation, "" or OtherLabel.
func MetricOperation(op string) string {
	switch admissionv1.Operation(op) {
	case "", admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
		return op
	}
	return OtherLabel
}
