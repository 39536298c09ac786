package cli_test

import (
	"os"
	"strings"
	"testing"
)

// TestWebhookConditionMatchesShipped: usher webhook prints, for the
// shipped ConfigMap, the matchCondition every webhook of
// deploy/webhooks.yaml carries; a changed bypassNamespaces (through the
// environment override) changes it.
func TestWebhookConditionMatchesShipped(t *testing.T) {
	out, errOut, code := run(t, "webhook", "--config", "../../../deploy/configmap.yaml")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errOut)
	}
	_, cond, ok := strings.Cut(out, "matchConditions:\n")
	if !ok {
		t.Fatalf("no matchConditions in %q", out)
	}
	shipped, err := os.ReadFile("../../../deploy/webhooks.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Indented as in a webhook entry of deploy/webhooks.yaml.
	indented := "    " + strings.ReplaceAll(strings.TrimSuffix(cond, "\n"), "\n", "\n    ") + "\n"
	if n := strings.Count(string(shipped), indented); n != 4 {
		t.Errorf("deploy/webhooks.yaml carries\n%s%d times, want on each of its 4 webhooks", indented, n)
	}
	if !strings.Contains(cond, `expression: '!["^kube-system$", "^usher-system$"].exists(p, request.namespace.matches(p))'`) {
		t.Errorf("condition %q", cond)
	}
}
