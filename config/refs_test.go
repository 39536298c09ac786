package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/usherhq/usher/config"
)

// refsBase has two partitions; prod has root.teams.ml and root.batch.
const refsBase = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
  - name: prod
    queues:
      - name: root
        queues:
          - name: teams
            queues:
              - name: ml
                submitacl: alice
          - name: batch
            submitacl: bob
`

// Every admission setting that names something in partitions: must name
// something that exists: a configuration that points nowhere would deny
// every workload it applies to, so it is an error at its position.
func TestAdmissionReferences(t *testing.T) {
	for _, tt := range []struct {
		name, block string
		want        []string // error lines, in order; nil: valid
	}{
		{"partition exists", "admissionController:\n  partition: prod\n  enforceQueueACLs: true\n", nil},
		{"partition names are not case sensitive", "admissionController:\n  partition: Prod\n", nil},
		{"unknown partition", "admissionController:\n  partition: production\n  enforceQueueACLs: true\n", []string{
			`q.yaml:17:14: admissionController.partition: "production" names no partition of this configuration (partitions: default, prod)`}},
		{"unknown partition, checks off", "admissionController:\n  partition: production\n", []string{
			`q.yaml:17:14: admissionController.partition: "production" names no partition of this configuration (partitions: default, prod)`}},
		{"mapping to existing queues", `admissionController:
  partition: prod
  enforceQueueACLs: true
  queueSources:
    - {kind: label, key: team, scheduler: kueue, template: "root.teams.{value}"}
  queueMapping:
    template: "root.{value}"
    table:
      - {value: ml, queue: root.Teams.ML}
      - {scheduler: kueue, value: b, queue: root.batch}
`, nil},
		{"mapping to a missing queue", `admissionController:
  partition: prod
  enforceDeleteACLs: true
  queueMapping:
    table:
      - {value: ml, queue: root.teams.ml}
      - {value: x, queue: root.teams.nlp}
`, []string{
			`q.yaml:22:27: admissionController.queueMapping.table[1].queue: "root.teams.nlp" is not a queue of partition prod`}},
		{"mapping for a scheduler no source reads", `admissionController:
  partition: prod
  queueMapping:
    table:
      - {scheduler: slurm, value: ml, queue: root.teams.ml}
`, []string{
			`q.yaml:20:21: admissionController.queueMapping.table[0].scheduler: "slurm" is the scheduler of no queue source, so this entry is never used (schedulers of queueSources: kai, kueue, volcano, yunikorn)`}},
		{"templates pointing nowhere", `admissionController:
  partition: prod
  queueSources:
    - {kind: label, key: team, scheduler: kueue, template: "root.groups.{value}"}
    - {kind: label, key: batch, scheduler: kueue, template: "root.batch.{value}"}
    - {kind: label, key: fixed, scheduler: kueue, template: "root.teams.nlp"}
  queueMapping:
    template: "queues.{namespace}.{value}"
`, []string{
			`q.yaml:19:60: admissionController.queueSources[0].template: "root.groups.{value}" can only name queues under root.groups, which is not a queue of partition prod`,
			`q.yaml:20:61: admissionController.queueSources[1].template: "root.batch.{value}" can only name queues under root.batch, which has no child queues in partition prod`,
			`q.yaml:21:61: admissionController.queueSources[2].template: "root.teams.nlp" is not a queue of partition prod`,
			`q.yaml:23:15: admissionController.queueMapping.template: "queues.{namespace}.{value}" never expands to a queue path: a queue path starts with root`}},
		{"default partition used but missing", "admissionController:\n  enforceQueueACLs: true\n", nil}, // default exists in refsBase
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("q.yaml", []byte(refsBase+tt.block))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("want valid, got:\n%v", err)
				}
				return
			}
			var inv *config.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("want errors %q, got %v", tt.want, err)
			}
			if got := diagStrings(inv.Diagnostics); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// The default partition name counts as a reference only when a check uses
// it: a file without a partition named default stays valid while the
// queue and delete checks are off, and is an error as soon as one is on.
func TestAdmissionDefaultPartitionReference(t *testing.T) {
	prodOnly := "partitions:\n  - name: prod\n    queues:\n      - name: root\n        submitacl: \"*\"\n"
	if _, err := config.Parse("q.yaml", []byte(prodOnly)); err != nil {
		t.Fatalf("checks off: %v", err)
	}
	_, err := config.Parse("q.yaml", []byte(prodOnly+"admissionController:\n  enforceQueueACLs: true\n"))
	want := `q.yaml:7:21: admissionController.partition: "default" (the default) names no partition of this configuration (partitions: prod); enforceQueueACLs needs one: set admissionController.partition`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

// An explicit defaultqueue must exist (it is every unmarked workload's
// queue).
func TestDefaultQueueReference(t *testing.T) {
	_, err := config.Parse("q.yaml", []byte("partitions:\n  - name: default\n    defaultqueue: root.missing\n    queues:\n      - name: root\n"))
	if err == nil || !strings.HasPrefix(err.Error(), `q.yaml:3:19: partition default: defaultqueue "root.missing" is not a queue of this partition`) {
		t.Fatalf("got %v", err)
	}
}

// The flat keys of a ConfigMap are checked the same way, naming the key.
func TestConfigMapReferences(t *testing.T) {
	for _, tt := range []struct {
		key, value, want string
	}{
		{"admissionController.partition", "production", `cm: admissionController.partition: "production" names no partition of this configuration (partitions: default, prod)`},
		{"admissionController.queueMapping", "table: [{value: x, queue: root.nope}]", `cm: admissionController.queueMapping.table[0].queue: "root.nope" is not a queue of partition default`},
	} {
		_, err := config.FromConfigMap("cm", map[string]string{"queues.yaml": refsBase, tt.key: tt.value})
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: got %v\nwant %s", tt.key, err, tt.want)
		}
	}
}

// A pattern warning points at the pattern: the item of a list, or its
// place in a comma-separated string; a ConfigMap names the key it uses.
func TestPatternWarningPositions(t *testing.T) {
	c := mustParse(t, queuesOnly+`admissionController:
  accessControl:
    systemUsers:
      - "^system:serviceaccount:kube-system:"
      - spark-operator
    externalGroups: "^trusted$, ^a$|admins"
  processNamespaces: "^spark-,^mpi-"
`)
	got := strings.Join(diagStrings(c.Warnings), "\n")
	for _, want := range []string{
		`q.yaml:10:9: warning: admissionController.accessControl.systemUsers: pattern "spark-operator" is not anchored`,
		`q.yaml:11:33: warning: admissionController.accessControl.externalGroups: alternative "admins" of pattern "^a$|admins" is not anchored: it also trusts "notadmins"; write "^a$|^admins$"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings\n%s\nlack\n%s", got, want)
		}
	}
	if strings.Contains(got, "processNamespaces") {
		t.Errorf("YuniKorn's documented processNamespaces warns:\n%s", got)
	}
	cm, err := config.FromConfigMap("cm", map[string]string{"queues.yaml": queuesOnly,
		"admissionController.filtering.processNamespaces": "spark-,^mpi-"})
	if err != nil {
		t.Fatal(err)
	}
	got = strings.Join(diagStrings(cm.Warnings), "\n")
	if want := `cm: warning: admissionController.filtering.processNamespaces: pattern "spark-" is not anchored at the start: it also matches "notspark-"; write "^spark-"`; got != want {
		t.Errorf("ConfigMap warnings\n%s\nwant\n%s", got, want)
	}
}
