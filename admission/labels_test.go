package admission

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestMetricLabels(t *testing.T) {
	for in, want := range map[string]string{
		"Pod": "Pod", "CronJob": "CronJob", "ReplicationController": "ReplicationController",
		"": "", "pod": OtherLabel, "Pods": OtherLabel, strings.Repeat("K", 1<<20): OtherLabel,
	} {
		if got := MetricKind(in); got != want {
			t.Errorf("MetricKind(%.20q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"CREATE": "CREATE", "UPDATE": "UPDATE", "DELETE": "DELETE", "CONNECT": "CONNECT", "": "",
		"create": OtherLabel, strings.Repeat("X", 1<<20): OtherLabel,
	} {
		if got := MetricOperation(in); got != want {
			t.Errorf("MetricOperation(%.20q) = %q, want %q", in, got, want)
		}
	}
}

func TestSlogAuditCapsRequestStrings(t *testing.T) {
	var buf bytes.Buffer
	hook := SlogAudit(slog.New(slog.NewJSONHandler(&buf, nil)))
	huge := strings.Repeat("x", 1<<20)
	groups := make([]string, 10000)
	for i := range groups {
		groups[i] = huge[:300]
	}
	hook(Record{Webhook: "mutate", UID: huge, Operation: huge, Kind: huge, Namespace: huge, Name: huge,
		User: huge, Groups: groups, Identity: huge, Queue: huge, Reason: huge})
	if buf.Len() > 32<<10 {
		t.Errorf("the record is %d bytes; want at most 32 KiB", buf.Len())
	}
	if !strings.Contains(buf.String(), "…[cut 9936 more]") || !strings.Contains(buf.String(), "[cut 1047552 bytes]") {
		t.Errorf("no cut marks in %.500s", buf.String())
	}
}
