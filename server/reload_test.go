package server_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/server"
)

// enforcedYAML checks queue ACLs at admission in partition default.
const enforcedYAML = teamsYAML + `admissionController:
  partition: default
  enforceQueueACLs: true
  queueMapping:
    table:
      - {value: data, queue: root.dev}
`

// podCreate is a pod CREATE by carol (group dev) labelled queue=value.
func podCreate(uid, value string) string {
	return fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":%q,
	  "kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},
	  "namespace":"team","operation":"CREATE","userInfo":{"username":"carol","groups":["dev"]},
	  "object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"queue":%q}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`, uid, value)
}

// A configuration whose admission settings point nowhere would deny every
// workload: a reload refuses it with the position of the mistake, and the
// last good configuration keeps deciding.
func TestReloadRefusesDanglingReferences(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, enforcedYAML)
	h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: time.Hour}, nil)
	admitted := func(value string) bool {
		t.Helper()
		_, body := h.post("/mutate", "application/json", podCreate("u-"+value, value))
		return strings.Contains(body, `"allowed":true`)
	}
	if !admitted("dev") || !admitted("data") {
		t.Fatal("carol may submit to root.dev, directly and through the mapping")
	}
	for _, tt := range []struct{ name, from, to, want string }{
		{"partition", "partition: default", "partition: production",
			`q.yaml:16:14: admissionController.partition: "production" names no partition of this configuration (partitions: default)`},
		{"mapping", "queue: root.dev}", "queue: root.devs}",
			`q.yaml:20:30: admissionController.queueMapping.table[0].queue: "root.devs" is not a queue of partition default`},
		{"template", "  queueMapping:\n", "  queueMapping:\n    template: \"root.dev.{value}\"\n",
			`q.yaml:19:15: admissionController.queueMapping.template: "root.dev.{value}" can only name queues under root.dev, which has no child queues in partition default`},
		{"default partition", "partition: default", "partition: \"\"\n  enforceDeleteACLs: true", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			writeFile(t, cfg, strings.Replace(enforcedYAML, tt.from, tt.to, 1))
			ok, err := h.srv.Reload()
			if tt.want == "" {
				// Control: the same edit that keeps pointing at a partition
				// is taken.
				if !ok || err != nil {
					t.Fatalf("valid change refused: %v", err)
				}
				writeFile(t, cfg, enforcedYAML)
				if ok, err := h.srv.Reload(); !ok || err != nil {
					t.Fatalf("restoring: %v", err)
				}
				return
			}
			if ok || err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Fatalf("reload: %v, %v; want the error %s", ok, err, tt.want)
			}
			if !admitted("dev") || !admitted("data") {
				t.Fatal("the last good configuration must keep deciding after a refused reload")
			}
			if _, body := h.post("/v1/access", "application/json", `{"queue":"root.ops","user":"bob"}`); !strings.Contains(body, `"allowed":true`) {
				t.Fatalf("decisions must keep the old rules: %s", body)
			}
			if !strings.Contains(h.logs.String(), "configuration refused") {
				t.Fatalf("refusal not logged:\n%s", h.logs.String())
			}
		})
	}
}

// /readyz is answered to anyone: it says that a reload failed and when,
// never why (the reason, which can name files, DNs and hosts, is in the
// log).
func TestReadyzShortReason(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, teamsYAML)
	h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: time.Hour}, nil)
	writeFile(t, cfg, strings.Replace(teamsYAML, "adminacl: bob", "adminacl: \"bob  secret-detail-7f3a\"", 1))
	if ok, err := h.srv.Reload(); ok || err == nil {
		t.Fatal("a broken file must be refused")
	}
	code, body := h.get("/readyz")
	if code != 200 || strings.Contains(body, "secret-detail-7f3a") || strings.Contains(body, cfg) || strings.Contains(body, "more than one space") {
		t.Fatalf("/readyz must not echo the reload error:\n%d %s", code, body)
	}
	if !regexp.MustCompile(`configuration reload failed at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ; see the log`).MatchString(body) {
		t.Fatalf("/readyz must give a short reason:\n%s", body)
	}
	if logs := h.logs.String(); !strings.Contains(logs, "secret-detail-7f3a") || !strings.Contains(logs, "more than one space") {
		t.Fatalf("the log keeps the detail:\n%s", logs)
	}
}

// Patterns given through ADMISSION_CONTROLLER_* variables are linted when
// serve starts, named by the variable: an unanchored spark-operator
// trusts that service account in every namespace.
func TestEnvironmentPatternsLintedAtStart(t *testing.T) {
	env := map[string]string{"ADMISSION_CONTROLLER_SYSTEM_USERS": "^system:serviceaccount:kube-system:,spark-operator"}
	h := start(t, server.Options{Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}, nil)
	want := `ADMISSION_CONTROLLER_SYSTEM_USERS: pattern \"spark-operator\" is not anchored: it also trusts \"system:serviceaccount:any-namespace:spark-operator\"`
	if logs := h.logs.String(); !strings.Contains(logs, want) || !strings.Contains(logs, `"level":"WARN"`) {
		t.Fatalf("the environment's pattern was not linted at start; logs:\n%s", logs)
	}
}

// A configuration taken by a reload is linted like the first one: its
// warnings are logged.
func TestReloadLogsWarnings(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, teamsYAML)
	h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: time.Hour}, nil)
	writeFile(t, cfg, teamsYAML+"admissionController:\n  accessControl:\n    externalGroups: \"^trusted$|admins\"\n")
	if ok, err := h.srv.Reload(); !ok || err != nil {
		t.Fatalf("reload: %v %v", ok, err)
	}
	want := `q.yaml:17:22: warning: admissionController.accessControl.externalGroups: alternative \"admins\" of pattern \"^trusted$|admins\" is not anchored`
	if logs := h.logs.String(); !strings.Contains(logs, want) {
		t.Fatalf("the reloaded configuration's warning was not logged; logs:\n%s", logs)
	}
}

// A file's pattern that the environment overrides is not in force: its
// warning is not logged, the environment's is.
func TestEnvironmentOverridesFileWarnings(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, teamsYAML+"admissionController:\n  accessControl:\n    externalUsers: \"file-airflow\"\n    externalGroups: \"file-admins\"\n")
	env := map[string]string{"ADMISSION_CONTROLLER_EXTERNAL_USERS": "env-airflow"}
	h := start(t, server.Options{ConfigPath: cfg, Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }}, nil)
	logs := h.logs.String()
	if strings.Contains(logs, "file-airflow") {
		t.Errorf("warning about an overridden setting logged:\n%s", logs)
	}
	for _, want := range []string{`ADMISSION_CONTROLLER_EXTERNAL_USERS: pattern \"env-airflow\"`, `externalGroups: pattern \"file-admins\"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
}

// A reload that moves people without changing a right says so in the log
// line and counts it.
func TestReloadLogsPlacementChanges(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeFile(t, cfg, teamsYAML)
	h := start(t, server.Options{ConfigPath: cfg, ReloadInterval: 20 * time.Millisecond}, nil)
	// A fixed rule to root.dev: dev members, rejected before (no
	// root.default), now land there.
	writeFile(t, cfg, strings.Replace(teamsYAML, "    queues:\n", "    placementrules:\n      - name: fixed\n        value: root.dev\n    queues:\n", 1))
	waitFor(t, func() bool { return strings.Contains(h.logs.String(), "configuration reloaded") })
	var reloaded string
	for _, l := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(l, "configuration reloaded") {
			reloaded = l
		}
	}
	if !strings.Contains(reloaded, `"gained":0,"lost":0,"queues":0,"placements":1`) {
		t.Errorf("the reload log line does not count the placement change: %s", reloaded)
	}
	if _, m := h.get("/metrics"); !strings.Contains(m, `usher_reload_access_changes_total{change="placement"} 1`) {
		t.Errorf("placement change not counted")
	}
}
