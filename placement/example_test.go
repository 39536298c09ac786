package placement_test

import (
	"fmt"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/placement"
)

// Where does alice's application go, given the namespace it runs in?
func Example() {
	cfg, err := config.Parse("queues.yaml", []byte(`
partitions:
  - name: default
    placementrules:
      - name: provided
      - name: tag
        value: namespace
        create: true
        parent:
          name: fixed
          value: root.teams
    queues:
      - name: root
        queues:
          - name: teams
            parent: true
            submitacl: " dev"
`))
	if err != nil {
		panic(err)
	}
	rules := cfg.Partitions[0].PlacementRules()
	cp, _ := cfg.Snapshot.Partition("default")
	res := rules.Place(cp, placement.Request{
		Subject: acl.NewSubject("alice", []string{"dev"}),
		Queue:   "ml.training", // root.ml_dot_training: does not exist
		Tags:    map[string]string{"namespace": "Spark"},
	})
	fmt.Println(res.Placed, res.Queue, res.Create)
	fmt.Println(rules.Describe(res.Rule))
	fmt.Println(res.Reason())
	// Output:
	// true root.teams.spark true
	// tag "namespace" create under (fixed "root.teams")
	// placed in root.teams.spark (to be created): alice may submit to root.teams: group entry "dev" in submitacl of root.teams
}
