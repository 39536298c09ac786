package config_test

import (
	"errors"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/policy"
)

const suggestSrc = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: ml
            queues:
              - name: training
              - name: serving
          - name: default
  - name: gpu
    placementrules:
      - name: provided
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: ml_dot_training
`

func TestSuggest(t *testing.T) {
	c := mustParse(t, suggestSrc)
	sub := acl.NewSubject("alice", nil)
	tests := []struct{ partition, queue, want string }{
		{"default", "ml.training", `did you mean root.ml.training? As a pod's queue marker, YuniKorn's placement (the implicit provided rule) puts "ml.training" in root.ml_dot_training, which does not exist, so such a pod goes to root.default when that exists, or is rejected.`},
		{"default", "root.ml.trainng", "did you mean root.ml.training?"},
		{"default", "root.training", "did you mean root.ml.training?"},
		{"default", "root.nothing.like.it", ""},
		{"default", "ml", "did you mean root.ml?"},
		{"gpu", "ml.training", `as a pod's queue marker, "ml.training" goes through this partition's placementrules (a provided rule puts it in root.ml_dot_training): usher place --queue ml.training shows where.`},
		{"defualt", "root.ml", "did you mean default? The partitions are default, gpu"},
		{"cpu", "root.ml", "did you mean gpu? The partitions are default, gpu"},
		{"other", "root.ml", "the partitions are default, gpu"},
	}
	for _, tc := range tests {
		p, err := c.Snapshot.Partition(tc.partition)
		if err == nil {
			_, err = p.Decide(tc.queue, sub, policy.Submit)
		}
		if err == nil {
			t.Fatalf("%s %s: no error", tc.partition, tc.queue)
		}
		if got := c.Suggest(tc.partition, tc.queue, err); got != tc.want {
			t.Errorf("%s %s:\n got %q\nwant %q", tc.partition, tc.queue, got, tc.want)
		}
	}
	if got := c.Suggest("default", "x", errors.New("resolver down")); got != "" {
		t.Errorf("other error: %q", got)
	}
	var nilConfig *config.Config
	if got := nilConfig.Suggest("default", "x", policy.ErrUnknownQueue); got != "" {
		t.Errorf("nil config: %q", got)
	}
}
