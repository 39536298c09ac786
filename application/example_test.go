package application_test

import (
	"fmt"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/policy"
)

// A partition built in code: Jane administers root.datascience, Bob is the
// cluster admin.
func examplePartition() *policy.CompiledPartition {
	mustACL := func(s string) *acl.ACL { a := acl.MustParse(s); return &a }
	snap, err := policy.Compile([]policy.Partition{{
		Name:     "default",
		AdminACL: mustACL("bob"),
		Root: &policy.Queue{Name: "root", SubmitACL: mustACL(" "), Children: []*policy.Queue{
			{Name: "marketing", SubmitACL: mustACL("john,jane")},
			{Name: "datascience", AdminACL: mustACL("jane"), Children: []*policy.Queue{
				{Name: "production", SubmitACL: mustACL("john")},
			}},
		}},
	}})
	if err != nil {
		panic(err)
	}
	cp, _ := snap.Partition("default")
	return cp
}

// Who may kill John's application in root.datascience.production: the
// owner, an admin of the queue or a parent, a cluster admin.
func ExamplePolicy_Decide() {
	cp := examplePartition()
	app := application.Application{ID: "application_1536220066338_0001", Owner: "john", Queue: "root.datascience.production"}
	for _, user := range []string{"john", "jane", "bob", "sue"} {
		d, err := application.Policy{Partition: cp}.Decide(app, acl.NewSubject(user, nil), application.Kill, "")
		if err != nil {
			panic(err)
		}
		fmt.Println(d.Allowed, d.Reason())
	}
	// Output:
	// true john may kill application_1536220066338_0001 (owner john, queue root.datascience.production): john owns it
	// true jane may kill application_1536220066338_0001 (owner john, queue root.datascience.production): queue admin: user entry "jane" in adminacl of root.datascience
	// true bob may kill application_1536220066338_0001 (owner john, queue root.datascience.production): cluster admin: user entry "bob" in the adminacl of partition default
	// false sue may not kill application_1536220066338_0001 (owner john, queue root.datascience.production): not the owner, not an admin of root.datascience.production or its parents, not a cluster or application admin, not in its modify ACL
}

// A move needs submit on both queues and the right to modify: each
// requirement is reported with its outcome.
func ExamplePolicy_Decide_move() {
	p := application.Policy{Partition: examplePartition()}
	app := application.Application{Owner: "john", Queue: "root.datascience.production"}
	d, _ := p.Decide(app, acl.NewSubject("jane", nil), application.Move, "root.marketing")
	fmt.Println(d.Allowed)
	for _, r := range d.Requirements {
		fmt.Printf("%s %s: %v\n", r.Need, r.Queue, r.Met) // Queue is empty for NeedModify
	}
	// Output:
	// true
	// submit to the queue it runs in root.datascience.production: true
	// submit to the target queue root.marketing: true
	// modify the application : true
}

// Application ACLs: the view ACL grants view only; defaults apply to
// applications that set none.
func ExamplePolicy_Decide_applicationACLs() {
	view, _, _ := acl.Parse(" analysts", acl.YARN) // mapreduce.job.acl-view-job
	admins := acl.MustParse(" spark-admins")       // spark.admin.acls.groups
	p := application.Policy{Partition: examplePartition(), Defaults: application.Defaults{Admin: &admins}}
	app := application.Application{Owner: "john", Queue: "root.marketing", ViewACL: &view}
	ann := acl.NewSubject("ann", []string{"analysts"})
	for _, action := range []application.Action{application.View, application.Kill} {
		d, _ := p.Decide(app, ann, action, "")
		fmt.Println(action, d.Allowed)
	}
	d, _ := p.Decide(app, acl.NewSubject("sam", []string{"spark-admins"}), application.Kill, "")
	fmt.Println(d.Reason())
	// Output:
	// view true
	// kill false
	// sam may kill the application of john in root.marketing: application admin: group entry "spark-admins" in applicationacls admin of partition default
}
