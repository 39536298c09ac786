package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
)

const queuesOnly = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
`

func TestAdmissionBlock(t *testing.T) {
	c := mustParse(t, queuesOnly+`admissionController:
  accessControl:
    externalUsers: "airflow"
  enforceQueueACLs: true
`)
	if c.Admission == nil || !c.Admission.Config().EnforceQueueACLs {
		t.Fatalf("admission settings not read: %+v", c.Admission)
	}
	w := diagStrings(c.Warnings)
	if len(w) != 1 || !strings.HasPrefix(w[0], "q.yaml:8:21: warning: admissionController.accessControl.externalUsers: pattern \"airflow\" is not anchored") {
		t.Fatalf("warnings %q", w)
	}
	for _, tt := range []struct{ block, want string }{
		{"admissionController:\n  accessControl:\n    bypassAuht: true\n", `q.yaml:8:5: admissionController.accessControl: unknown key "bypassAuht" (did you mean "bypassAuth"?)`},
		{"admissionController:\n  accessControl:\n    externalGroups: \"(\"\n", `q.yaml:8:21: admissionController.accessControl.externalGroups[0]: invalid regular expression "("`},
		{"admissionController:\n  enforceQueueACLs: maybe\n", "q.yaml:7:21: admissionController: cannot unmarshal !!str `maybe` into bool"},
	} {
		_, err := config.Parse("q.yaml", []byte(queuesOnly+tt.block))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want prefix %q", tt.block, err, tt.want)
		}
	}
	// Defaults: controllers of both kinds are trusted.
	d := config.Default()
	su := strings.Join(d.Admission.Config().AccessControl.SystemUsers, " ")
	if !strings.Contains(su, "^system:serviceaccount:kube-system:") || !strings.Contains(su, "^system:kube-controller-manager$") {
		t.Fatalf("default systemUsers %q", su)
	}
}

func TestConfigMap(t *testing.T) {
	data := map[string]string{
		"queues.yaml": queuesOnly,
		"admissionController.accessControl.externalGroups":   "^airflow-admins$",
		"admissionController.accessControl.trustControllers": "false",
	}
	c, err := config.FromConfigMap("cm", data)
	if err != nil {
		t.Fatal(err)
	}
	ac := c.Admission.Config().AccessControl
	if *ac.TrustControllers || len(ac.ExternalGroups) != 1 || ac.ExternalGroups[0] != "^airflow-admins$" {
		t.Fatalf("flat keys not applied: %+v", ac)
	}
	// A mounted ConfigMap directory, with Kubernetes' ..data bookkeeping.
	dir := t.TempDir()
	for k, v := range data {
		os.WriteFile(filepath.Join(dir, k), []byte(v), 0o600)
	}
	os.Mkdir(filepath.Join(dir, "..data"), 0o700)
	if c, err = config.Load(dir); err != nil || *c.Admission.Config().AccessControl.TrustControllers {
		t.Fatalf("dir: %v", err)
	}
	// A ConfigMap manifest.
	manifest := filepath.Join(dir, "..cm.yaml")
	os.WriteFile(manifest, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: yunikorn-configs}\ndata:\n  queues.yaml: |\n"+
		indent(queuesOnly, "    ")+"  admissionController.accessControl.bypassAuth: \"true\"\n"), 0o600)
	if c, err = config.Load(manifest); err != nil || !c.Admission.Config().AccessControl.BypassAuth {
		t.Fatalf("manifest: %v %+v", err, c)
	}
	// Both ways at once is refused; so are bad values and unknown keys.
	for _, bad := range []map[string]string{
		{"queues.yaml": queuesOnly + "admissionController: {enforceQueueACLs: true}\n", "admissionController.accessControl.bypassAuth": "true"},
		{"queues.yaml": queuesOnly, "admissionController.accessControl.bypassAuth": "yes please"},
		{"queues.yaml": queuesOnly, "admissionController.accessControl.externalUser": "x"},
		{"other.yaml": queuesOnly},
	} {
		if _, err := config.FromConfigMap("cm", bad); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = pre + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// A value yaml.v3 cannot decode is placed at its node, even when the
// value itself reads "line N:": the message is never searched for a
// line.
func TestDecodeErrorAtItsNode(t *testing.T) {
	_, err := config.Parse("q.yaml", []byte(queuesOnly+"admissionController:\n  enforceQueueACLs: \"\\nline 1: x\"\n"))
	want := "q.yaml:7:21: admissionController: cannot unmarshal !!str `\nline 1: x` into bool"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}
