package impact_test

import (
	"fmt"
	"os"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/impact"
)

func Example() {
	old, _ := config.Parse("old.yaml", []byte(`
partitions:
  - name: default
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: prod
            submitacl: "alice dev"
            queues:
              - name: etl
              - name: ml
`))
	new, _ := config.Parse("new.yaml", []byte(`
partitions:
  - name: default
    adminacl: " sre"
    queues:
      - name: root
        submitacl: " "
        queues:
          - name: prod
            submitacl: "alice"
            queues:
              - name: etl
`))
	r := impact.DiffConfigs(old, new, impact.Options{
		Subjects: []impact.Subject{{User: "bob", Groups: []string{"dev"}}},
	})
	r.Old, r.New = "old.yaml", "new.yaml"
	impact.WriteText(os.Stdout, r)
	s := impact.Summarize(old, new, 1)
	fmt.Println(s.Gained, s.Lost, s.First)
	// Output:
	// --- old.yaml
	// +++ new.yaml
	// partition default
	//   root
	// +   submit  group sre         and 2 of the 3 queues below
	// +   admin   group sre         and 2 of the 3 queues below
	//   root.prod
	// -   submit  group dev         and all 2 queues below
	// -   submit  bob (groups dev)  and all 2 queues below
	//   root.prod.ml (queue removed)
	// -   submit  user alice
	// 2 rights gained, 3 rights lost, starting in 3 queues
	// 2 2 [+submit group sre on default/root (3 queues)]
}
