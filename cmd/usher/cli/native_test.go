package cli_test

import (
	"strings"
	"testing"

	arv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

// TestNativeFollowsConfiguration: usher native renders the floor from the
// configuration usher serve loads: with groups given it stamps; with
// merge it guards only and lists the CREATE stamp as webhook only; every
// setting the floor cannot do is listed at FILE:LINE; a configuration past
// the floor's CEL limits is refused.
func TestNativeFollowsConfiguration(t *testing.T) {
	dir := t.TempDir()
	queues := "    queues:\n      - name: root\n        submitacl: \"*\"\n"
	given := writeFile(t, dir, "given.yaml", "partitions:\n  - name: default\n"+queues+
		"admissionController:\n  accessControl:\n    externalUsers: [\"^airflow$\"]\n")
	out, errOut, code := run(t, "native", "--config", given)
	docs := strings.Split(out, "\n---\n")
	if code != 0 || len(docs) != 4 || strings.Contains(errOut, "webhook only") {
		t.Fatalf("code %d, %d documents, stderr %s", code, len(docs), errOut)
	}
	var m arv1.MutatingAdmissionPolicy
	if err := yaml.UnmarshalStrict([]byte(docs[2]), &m); err != nil || m.Spec.ReinvocationPolicy != arv1.NeverReinvocationPolicy || len(m.Spec.Mutations) != 3 {
		t.Errorf("mutating policy %v: %+v", err, m.Spec)
	}
	var v arv1.ValidatingAdmissionPolicy
	if err := yaml.UnmarshalStrict([]byte(docs[0]), &v); err != nil || !strings.Contains(v.Spec.Variables[0].Expression, `(request.userInfo.username.matches("^airflow$"))`) {
		t.Errorf("validating policy %v: %+v", err, v.Spec.Variables)
	}

	merge := writeFile(t, dir, "merge.yaml", "partitions:\n  - name: default\n    groups: merge\n    usergroupresolver:\n      type: test\n      users:\n        carol: [ml]\n"+queues+
		"admissionController:\n  enforceQueueACLs: true\n  enforceDeleteACLs: true\n")
	out, errOut, code = run(t, "native", "--config", merge)
	if code != 0 || strings.Count(out, "\n---\n") != 1 || strings.Contains(out, "MutatingAdmissionPolicy") {
		t.Fatalf("code %d, want the validating policy only:\n%s\n%s", code, out, errOut)
	}
	notes := []string{"merge.yaml:3:13: note: partition default: groups merge: webhook only: the CREATE stamp",
		"merge.yaml:12:21: note: admissionController.enforceQueueACLs: webhook only: the queue ACLs",
		"merge.yaml:13:22: note: admissionController.enforceDeleteACLs: webhook only: the kill rule"}
	for _, want := range notes {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// lint lists the same notes, and they fail nothing, --strict included.
	out, errOut, code = run(t, "lint", "--strict", merge)
	for _, want := range notes {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("lint --strict: code %d, stdout lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
	if out, _, code = run(t, "lint", "-o", "sarif", merge); code != 0 || strings.Count(out, `"level": "note"`) != 3 {
		t.Errorf("lint -o sarif: code %d, want 3 notes:\n%s", code, out)
	}

	big := writeFile(t, dir, "big.yaml", "partitions:\n  - name: default\n"+queues+"admissionController:\n  accessControl:\n    externalGroups: \""+strings.Repeat("^team-[a-z]+-x$,", 20)+"\"\n")
	if _, errOut, code = run(t, "native", "--config", big); code != 2 || !strings.Contains(errOut, "externalGroups hold 300 bytes of patterns; the native floor matches at most 256") {
		t.Errorf("code %d: %s", code, errOut)
	}
}
