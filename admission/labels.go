package admission

import (
	admissionv1 "k8s.io/api/admission/v1"
)

// OtherLabel is the metric label value of a kind or operation the webhook
// does not know.
const OtherLabel = "other"

// MetricKind returns a metric label for an object kind from a closed set:
// the kind itself when the webhook handles a kind of that name, "" for a
// request that could not be decoded, and OtherLabel for anything else. A
// label taken from the request as it is would let every invented kind
// create a metric series kept forever.
func MetricKind(kind string) string {
	if kind == "" {
		return ""
	}
	for i := range kinds {
		if kinds[i].kind == kind {
			return kinds[i].kind
		}
	}
	return OtherLabel
}

// MetricOperation returns a metric label for an admission operation from
// a closed set: CREATE, UPDATE, DELETE, CONNECT, "" for a request that
// could not be decoded, and OtherLabel for anything else.
func MetricOperation(op string) string {
	switch admissionv1.Operation(op) {
	case "", admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect:
		return op
	}
	return OtherLabel
}
