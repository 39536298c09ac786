package engine_test

import (
	"context"
	"fmt"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/policy"
)

func Example() {
	cfg, err := config.Parse("queues.yaml", []byte(`
partitions:
  - name: default
    usergroupresolver:
      type: test
      users:
        john: [dev]
    queues:
      - name: root
        queues:
          - name: test
            adminacl: sue dev,test
`))
	if err != nil {
		panic(err)
	}
	e, err := engine.New(cfg, nil)
	if err != nil {
		panic(err)
	}
	// No groups supplied: the partition's resolver finds john's.
	res, err := e.Check(context.Background(), engine.Request{Queue: "root.test", User: "john", Action: policy.Admin})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Allowed, res.Identity)
	fmt.Println(res.Reason())
	// Output:
	// true john [dev(test)]
	// john may administer root.test: group entry "dev" in adminacl of root.test
}

// Place answers where YuniKorn would run an application: the partition's
// placement rules (here a tag rule on the namespace, then the queue the
// application names), for the user as Check identifies it.
func ExampleGeneration_Place() {
	cfg, err := config.Parse("queues.yaml", []byte(`
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
        parent: {name: fixed, value: root.teams}
      - name: provided
    queues:
      - name: root
        queues:
          - name: teams
            parent: true
            submitacl: " dev"
          - name: ml
            submitacl: "*"
`))
	if err != nil {
		panic(err)
	}
	e, err := engine.New(cfg, nil)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	res, err := e.Place(ctx, engine.PlaceRequest{Queue: "root.ml", Namespace: "spark", User: "alice", Groups: []string{"dev"}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Queue, "by", res.RuleName())
	// bob is not in dev: the tag rule's queue is denied, the next rule places.
	res, _ = e.Place(ctx, engine.PlaceRequest{Queue: "root.ml", Namespace: "spark", User: "bob", Groups: []string{"ops"}})
	fmt.Println(res.Queue, "by", res.RuleName())
	// Output:
	// root.teams.spark by rule 1: tag "namespace" create under (fixed "root.teams")
	// root.ml by rule 2: provided
}
