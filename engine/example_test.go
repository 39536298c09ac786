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
	e, err := engine.New(cfg)
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
