package admission

import (
	"strings"
	"testing"
)

// TestUnreadMembersStillChecked: the members the handler does not read
// (requestKind, requestResource, requestSubResource, options and
// userInfo.uid) are still refused when repeated or of the wrong type, as
// encoding/json would keep the last one or fail.
func TestUnreadMembersStillChecked(t *testing.T) {
	review := func(req string) string {
		return `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":` + req + `}`
	}
	for _, tc := range []struct{ req, want string }{
		{`{"uid":"u","requestKind":{"group":"","version":"v1","kind":"Pod"},"requestKind":{"group":"apps","version":"v1","kind":"Deployment"}}`, "duplicate member"},
		{`{"uid":"u","requestResource":null,"requestResource":{"group":"","version":"v1","resource":"pods"}}`, "duplicate member"},
		{`{"uid":"u","requestSubResource":"","requestSubResource":"eviction"}`, "duplicate member"},
		{`{"uid":"u","options":{},"options":{"dryRun":["All"]}}`, "duplicate member"},
		{`{"uid":"u","userInfo":{"uid":"a","uid":"b"}}`, "duplicate member"},
		{`{"uid":"u","requestKind":5}`, "request.requestKind"},
		{`{"uid":"u","requestResource":{"group":1}}`, "request.requestResource.group"},
		{`{"uid":"u","requestSubResource":{}}`, "request.requestSubResource"},
		{`{"uid":"u","userInfo":{"uid":["x"]}}`, "request.userInfo.uid"},
	} {
		rv := unlimited()
		if err := decodeReview(review(tc.req), &rv); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.req, err, tc.want)
		}
	}
}
