package application_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/policy"
)

// The queue structure of the examples of YARN's application ACL design
// (killing and moving an application). The page shows it only as a
// diagram; its text fixes that Production has a parent whose admin may kill
// in it (Jane, "queue administrator of the parent queue" Datascience) and
// that Test, Marketing and Dev are distinct queues. We read it as
//
//	root
//	├── Marketing
//	├── Dev
//	└── Datascience
//	    ├── Production
//	    └── Test
//
// Bob is the cluster administrator (yarn.admin.acl) in both examples. The
// root queue follows the page's best practice (" ", nobody).

// example1 sets the roles of "Killing an Application in the Queue
// Production": Jane administers Datascience.
const example1 = `
partitions:
  - name: default
    adminacl: bob
    queues:
      - name: root
        submitacl: " "
        adminacl: " "
        queues:
          - name: Marketing
            submitacl: john,jane
          - name: Dev
          - name: Datascience
            adminacl: jane
            queues:
              - name: Production
                submitacl: john
              - name: Test
                submitacl: john
`

// example2 sets the roles of "Moving the Application and Viewing the Log in
// the Queue Test": Jane administers Marketing (through her group others,
// the page's aclAdministerApps example) and Dev, not Datascience.
const example2 = `
partitions:
  - name: default
    adminacl: bob
    queues:
      - name: root
        submitacl: " "
        adminacl: " "
        queues:
          - name: Marketing
            submitacl: john,jane
            adminacl: " others"
          - name: Dev
            adminacl: jane
          - name: Datascience
            queues:
              - name: Production
                submitacl: john
              - name: Test
                submitacl: john
`

func load(t testing.TB, yaml string) *config.Config {
	t.Helper()
	c, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func policyOf(t testing.TB, c *config.Config) application.Policy {
	t.Helper()
	cp, err := c.Snapshot.Partition("default")
	if err != nil {
		t.Fatal(err)
	}
	return application.Policy{Partition: cp, Defaults: c.Partitions[0].Applications}
}

func yarnACL(t testing.TB, text string) *acl.ACL {
	t.Helper()
	a, _, err := acl.Parse(text, acl.YARN)
	if err != nil {
		t.Fatal(err)
	}
	return &a
}

type story struct {
	name   string
	user   string
	groups []string
	action application.Action
	target string
	allow  bool
	rule   application.Rule // the rule that granted (for move: the right to modify); 0 when denied
	reason string           // a part of the reason
}

func runStories(t *testing.T, p application.Policy, app application.Application, stories []story) {
	t.Helper()
	for _, s := range stories {
		t.Run(s.name, func(t *testing.T) {
			d, err := p.Decide(app, acl.NewSubject(s.user, s.groups), s.action, s.target)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != s.allow {
				t.Fatalf("allowed %v, want %v: %s", d.Allowed, s.allow, d.Reason())
			}
			by, ok := d.By()
			if ok != s.allow || (ok && by.Rule != s.rule) {
				t.Errorf("decided by %v (%v), want %v", by.Rule, ok, s.rule)
			}
			if !strings.Contains(d.Reason(), s.reason) {
				t.Errorf("reason %q lacks %q", d.Reason(), s.reason)
			}
			if strings.Contains(d.Reason(), "\n") {
				t.Errorf("reason is more than one line: %q", d.Reason())
			}
		})
	}
}

// YARN's application ACL design, "Example: Killing an Application in the Queue Production".
// The outcomes of John, Jane and Bob killing are the page's; the others are
// derived from the rules and say so.
func TestYARNKillInProduction(t *testing.T) {
	p := policyOf(t, load(t, example1))
	app := application.Application{ID: "application_1536220066338_0001", Owner: "john", Queue: "root.Datascience.Production"}
	runStories(t, p, app, []story{
		// "John attempts to kill the application, which is allowed because he is the application owner."
		{"john kills his application", "john", nil, application.Kill, "", true, application.Owner, "john owns it"},
		// "Jane attempts to kill a job in the queue Production, which she can do as the queue administrator of the parent queue."
		{"jane kills as admin of the parent queue", "jane", nil, application.Kill, "", true, application.QueueAdmin,
			`queue admin: user entry "jane" in adminacl of root.datascience`},
		// "Bob ... because he is the YARN cluster administrator, he can kill the job."
		{"bob kills as cluster admin", "bob", nil, application.Kill, "", true, application.ClusterAdmin,
			`cluster admin: user entry "bob" in the adminacl of partition default`},
		// Derived: a queue admin may view the application too (YARN's
		// ClientRMService checks ADMINISTER_QUEUE beside the application ACL).
		{"jane views as queue admin (derived)", "jane", nil, application.View, "", true, application.QueueAdmin, "queue admin"},
		// Derived: anyone else has no rule that grants.
		{"sue may not kill (derived)", "sue", []string{"sue"}, application.Kill, "", false, 0,
			"sue may not kill application_1536220066338_0001 (owner john, queue root.datascience.production): not the owner"},
		// Derived: John may move his application to Test, where he may submit.
		{"john moves to Test (derived)", "john", nil, application.Move, "root.Datascience.Test", true, application.Owner,
			"may submit to root.datascience.production, where it runs"},
		// Derived: Jane administers both Production and Test through
		// Datascience, which gives submit on both and the right to modify.
		{"jane moves to Test (derived)", "jane", nil, application.Move, "root.datascience.test", true, application.QueueAdmin, "may modify it"},
		// Derived: Jane may not move it to Dev: nobody may submit there but Bob.
		{"jane may not move to Dev (derived)", "jane", nil, application.Move, "root.dev", false, 0,
			"no submit or admin right on the target root.dev"},
	})
}

// YARN's application ACL design, "Example: Moving the Application and Viewing the Log in the
// Queue Test". Jane has view rights through the application's
// mapreduce.job.acl-view-job.
func TestYARNMoveAndViewInTest(t *testing.T) {
	p := policyOf(t, load(t, example2))
	app := application.Application{
		ID: "application_1536220066338_0002", Owner: "john", Queue: "root.Datascience.Test",
		ViewACL: yarnACL(t, "jane"),
	}
	jane := []string{"jane", "others"}
	runStories(t, p, app, []story{
		// "John attempts to view the logs for his job, which is allowed because he is the application owner."
		{"john views his logs", "john", nil, application.View, "", true, application.Owner, "john owns it"},
		// "Jane attempts ... to move the application to the Marketing queue. She is denied access to the Test queue via the queue ACLs."
		{"jane may not move to Marketing", "jane", jane, application.Move, "root.Marketing", false, 0,
			"no submit or admin right on root.datascience.test, where it runs"},
		// "She is also unable to kill a job running in queue Test."
		{"jane may not kill", "jane", jane, application.Kill, "", false, 0, "not in its modify ACL"},
		// "She then attempts to access the logs ... and is allowed access via the mapreduce.job.acl-view-job ACL."
		{"jane views through the view ACL", "jane", jane, application.View, "", true, application.ViewACL,
			`user entry "jane" in its view ACL`},
		// "Bob ... As the YARN cluster administrator, he has access to all queues and can move the application."
		{"bob moves to Marketing", "bob", nil, application.Move, "root.Marketing", true, application.ClusterAdmin,
			"bob may move application_1536220066338_0002 (owner john, queue root.datascience.test) to root.marketing"},
		// Derived: John may move his application to Marketing, where he may submit.
		{"john moves to Marketing (derived)", "john", nil, application.Move, "root.marketing", true, application.Owner, "john owns it"},
		// Derived: the owner is not exempt from the queue checks: nobody but
		// Jane and Bob may submit to Dev.
		{"john may not move to Dev (derived)", "john", nil, application.Move, "root.dev", false, 0, "no submit or admin right on the target root.dev"},
		// Derived: Jane administers Marketing through her group, so she may
		// kill the application once it runs there (see TestQueueAdminByGroup).
	})
	moved := app
	moved.Queue = "root.marketing"
	runStories(t, p, moved, []story{
		{"jane kills in Marketing as admin through her group (derived)", "jane", jane, application.Kill, "", true, application.QueueAdmin,
			`group entry "others" in adminacl of root.marketing`},
	})
}

func TestApplicationACLs(t *testing.T) {
	c := load(t, `
partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: a
            submitacl: "*"
          - name: b
            submitacl: kim
    applicationacls:
      admin: " spark-admins"
      view: " analysts"
      modify: lee
`)
	p := policyOf(t, c)
	own := application.Application{Owner: "john", Queue: "root.a", ModifyACL: yarnACL(t, "kim"), ViewACL: yarnACL(t, " ")}
	def := application.Application{Owner: "john", Queue: "root.a"}
	tests := []struct {
		name   string
		app    application.Application
		user   string
		groups []string
		action application.Action
		target string
		allow  bool
		rule   application.Rule
		dflt   bool
	}{
		{"modify ACL grants kill", own, "kim", nil, application.Kill, "", true, application.ModifyACL, false},
		{"modify ACL grants modify", own, "kim", nil, application.Modify, "", true, application.ModifyACL, false},
		{"modify ACL implies view", own, "kim", nil, application.View, "", true, application.ModifyACL, false},
		{"view ACL does not grant kill", def, "ann", []string{"analysts"}, application.Kill, "", false, 0, false},
		{"default view ACL grants view", def, "ann", []string{"analysts"}, application.View, "", true, application.ViewACL, true},
		{"an application's own empty view ACL replaces the default", own, "ann", []string{"analysts"}, application.View, "", false, 0, false},
		{"default modify ACL grants kill", def, "lee", nil, application.Kill, "", true, application.ModifyACL, true},
		{"own modify ACL replaces the default", own, "lee", nil, application.Kill, "", false, 0, false},
		{"application admin kills anything", own, "sam", []string{"spark-admins"}, application.Kill, "", true, application.ApplicationAdmin, false},
		{"application admin moves where it may submit", own, "sam", []string{"spark-admins"}, application.Move, "root.a", true, application.ApplicationAdmin, false},
		{"application admin may not move where it may not submit", own, "sam", []string{"spark-admins"}, application.Move, "root.b", false, 0, false},
		{"modify ACL and submit on both queues allow a move", own, "kim", nil, application.Move, "root.b", true, application.ModifyACL, false},
		{"submit on both queues without modify denies a move", own, "kim2", nil, application.Move, "root.a", false, 0, false},
		{"the owner needs submit on the target", own, "john", nil, application.Move, "root.b", false, 0, false},
		{"no root ACL: nobody else", def, "zed", nil, application.View, "", false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := p.Decide(tt.app, acl.NewSubject(tt.user, tt.groups), tt.action, tt.target)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tt.allow {
				t.Fatalf("allowed %v, want %v: %s", d.Allowed, tt.allow, d.Reason())
			}
			by, _ := d.By()
			if by.Rule != tt.rule || by.Default != tt.dflt {
				t.Errorf("by %v default %v, want %v %v: %s", by.Rule, by.Default, tt.rule, tt.dflt, d.Reason())
			}
		})
	}
}

func TestMoveTrail(t *testing.T) {
	p := policyOf(t, load(t, example2))
	app := application.Application{Owner: "john", Queue: "root.datascience.test", ViewACL: yarnACL(t, "jane")}
	d, err := p.Decide(app, acl.NewSubject("jane", []string{"others"}), application.Move, "root.marketing")
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed || len(d.Requirements) != 3 {
		t.Fatalf("%+v", d)
	}
	want := []struct {
		need  application.Need
		queue string
		met   bool
	}{
		{application.NeedSourceQueue, "root.datascience.test", false},
		{application.NeedTargetQueue, "root.marketing", true},
		{application.NeedModify, "", false},
	}
	for i, w := range want {
		r := d.Requirements[i]
		if r.Need != w.need || r.Queue != w.queue || r.Met != w.met {
			t.Errorf("requirement %d: %v %q %v, want %v %q %v", i, r.Need, r.Queue, r.Met, w.need, w.queue, w.met)
		}
	}
	// Jane may submit to Marketing through her submitacl entry, checked
	// before the adminacl that also lists her group.
	if by, _ := d.Requirements[1].By(); by.Grant.ACL != policy.SubmitACL || by.Grant.Queue != "root.marketing" {
		t.Errorf("target granted by %+v", by.Grant)
	}
	// Every check of the modify requirement was made and failed; a move
	// never consults the view ACL.
	rules := []application.Rule{application.Owner, application.QueueAdmin, application.ClusterAdmin, application.ApplicationAdmin, application.ModifyACL}
	steps := d.Requirements[2].Steps
	if len(steps) != len(rules) {
		t.Fatalf("modify steps %+v", steps)
	}
	for i, s := range steps {
		if s.Rule != rules[i] || !s.Reached || s.Allowed {
			t.Errorf("step %d: %+v", i, s)
		}
	}
	if steps[2].ACL == nil || steps[2].ACL.String() != "bob" {
		t.Errorf("the cluster admin step should show the partition adminacl: %+v", steps[2])
	}
	want2 := "jane may not move the application of john in root.datascience.test to root.marketing: " +
		"no submit or admin right on root.datascience.test, where it runs; no right to modify it (not the owner"
	if !strings.HasPrefix(d.Reason(), want2) {
		t.Errorf("reason:\n%s\nwant prefix\n%s", d.Reason(), want2)
	}
}

func TestStepsAfterTheDecisionAreNotReached(t *testing.T) {
	p := policyOf(t, load(t, example1))
	app := application.Application{Owner: "john", Queue: "root.datascience.production", ModifyACL: yarnACL(t, "john")}
	d, _ := p.Decide(app, acl.NewSubject("john", nil), application.View, "")
	steps := d.Requirements[0].Steps
	if !steps[0].Allowed || !steps[0].Reached {
		t.Fatalf("owner step %+v", steps[0])
	}
	for _, s := range steps[1:] {
		if s.Reached || s.Allowed || s.Match.Allowed() {
			t.Errorf("step after the decision: %+v", s)
		}
	}
}

func TestErrors(t *testing.T) {
	p := policyOf(t, load(t, example1))
	sub := acl.NewSubject("john", nil)
	ok := application.Application{Owner: "john", Queue: "root.dev"}
	tests := []struct {
		name   string
		p      application.Policy
		app    application.Application
		sub    *acl.Subject
		action application.Action
		target string
		is     error
		msg    string
	}{
		{"unknown queue", p, application.Application{Owner: "john", Queue: "root.nope"}, sub, application.View, "", policy.ErrUnknownQueue, `queue "root.nope"`},
		{"unknown target", p, ok, sub, application.Move, "root.nope", policy.ErrUnknownQueue, "target"},
		{"no owner", p, application.Application{Queue: "root.dev"}, sub, application.View, "", application.ErrNoOwner, "owner"},
		{"invalid owner", p, application.Application{Owner: "jo hn", Queue: "root.dev"}, sub, application.View, "", nil, "whitespace"},
		{"move without target", p, ok, sub, application.Move, "", nil, "needs a target"},
		{"target without move", p, ok, sub, application.Kill, "root.dev", nil, "only used by move"},
		{"zero action", p, ok, sub, 0, "", nil, "unknown action"},
		{"nil subject", p, ok, nil, application.View, "", nil, "no subject"},
		{"nil partition", application.Policy{}, ok, sub, application.View, "", nil, "no partition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := tt.p.Decide(tt.app, tt.sub, tt.action, tt.target)
			if err == nil || !strings.Contains(err.Error(), tt.msg) || (tt.is != nil && !errors.Is(err, tt.is)) {
				t.Fatalf("err %v, want %q (%v)", err, tt.msg, tt.is)
			}
			if d.Allowed {
				t.Fatal("an error must come with a denial")
			}
		})
	}
}

func TestZeroDecisionDenies(t *testing.T) {
	var d application.Decision
	if d.Allowed || d.Reason() == "" {
		t.Fatalf("zero decision: %v %q", d.Allowed, d.Reason())
	}
	if _, ok := d.By(); ok {
		t.Fatal("zero decision has no grant")
	}
}

func TestParseAction(t *testing.T) {
	for _, a := range []application.Action{application.View, application.Modify, application.Kill, application.Move} {
		got, err := application.ParseAction(a.String())
		if err != nil || got != a {
			t.Errorf("%v: %v %v", a, got, err)
		}
	}
	if _, err := application.ParseAction("delete"); err == nil || !strings.Contains(err.Error(), `"delete"`) {
		t.Errorf("delete: %v", err)
	}
	if s := application.Action(9).String(); s != "Action(9)" {
		t.Error(s)
	}
}

// Decide without defaults is the one-call form for callers that hold only a
// compiled partition.
func TestDecideWithoutDefaults(t *testing.T) {
	c := load(t, example1)
	cp, _ := c.Snapshot.Partition("")
	d, err := application.Policy{Partition: cp}.Decide(application.Application{Owner: "john", Queue: "root.datascience.test"}, acl.NewSubject("jane", nil), application.Kill, "")
	if err != nil || !d.Allowed {
		t.Fatalf("%v %s", err, d.Reason())
	}
}

// An application without a recorded owner has no owner: not even a user
// whose name looks like a placeholder passes the owner check; the modify
// ACL and the admins still decide.
func TestUnownedApplication(t *testing.T) {
	p := policyOf(t, load(t, example1))
	mod := yarnACL(t, "carol")
	for _, tc := range []struct {
		name, user string
		app        application.Application
		allowed    bool
		wantErr    error
		reason     string
	}{
		{"nobody owns it", "john", application.Application{Unowned: true, Queue: "root.Datascience.Production"}, false, nil,
			"the application with no recorded owner in root.datascience.production"},
		{"empty user name is no owner", "(unrecorded)", application.Application{Unowned: true, Queue: "root.Datascience.Production"}, false, nil, ""},
		{"modify ACL member", "carol", application.Application{Unowned: true, Queue: "root.Datascience.Production", ModifyACL: mod}, true, nil,
			`user entry "carol" in its modify ACL`},
		{"queue admin", "jane", application.Application{Unowned: true, Queue: "root.Datascience.Production"}, true, nil, "queue admin"},
		{"cluster admin", "bob", application.Application{Unowned: true, Queue: "root.Datascience.Production"}, true, nil, "cluster admin"},
		{"unowned with an owner is a mistake", "bob", application.Application{Unowned: true, Owner: "john"}, false, nil, ""},
		{"no owner and not unowned", "bob", application.Application{Queue: "root.Datascience.Production"}, false, application.ErrNoOwner, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := p.Decide(tc.app, acl.NewSubject(tc.user, nil), application.Kill, "")
			if tc.app.Unowned && tc.app.Owner != "" {
				if err == nil {
					t.Fatal("want an error for an unowned application with an owner")
				}
				return
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed != tc.allowed || !strings.Contains(d.Reason(), tc.reason) {
				t.Fatalf("allowed=%v %q, want %v containing %q", d.Allowed, d.Reason(), tc.allowed, tc.reason)
			}
			if d.Owner != "" {
				t.Fatalf("Owner %q, want none", d.Owner)
			}
		})
	}
}

// A queue the partition lacks is an error, unless UnknownQueueAsRoot: then
// root's admins decide (and the owner), and the reason names the queue.
func TestUnknownQueueAsRoot(t *testing.T) {
	p := policyOf(t, load(t, example1))
	app := application.Application{Owner: "john", Queue: "root.gone"}
	if _, err := p.Decide(app, acl.NewSubject("bob", nil), application.Kill, ""); !errors.Is(err, policy.ErrUnknownQueue) {
		t.Fatalf("err %v, want ErrUnknownQueue", err)
	}
	app.UnknownQueueAsRoot = true
	for _, tc := range []struct {
		user    string
		allowed bool
	}{{"john", true}, {"bob", true}, {"jane", false}, {"mallory", false}} {
		d, err := p.Decide(app, acl.NewSubject(tc.user, nil), application.Kill, "")
		if err != nil {
			t.Fatal(err)
		}
		want := `queue "root.gone" is not in partition "default", so only admins of root count as its queue admins`
		if d.Allowed != tc.allowed || d.Queue != "root" || d.UnknownQueue != "root.gone" || !strings.Contains(d.Reason(), want) {
			t.Errorf("%s: allowed=%v queue=%q unknown=%q %q; want %v in root, reason containing %q",
				tc.user, d.Allowed, d.Queue, d.UnknownQueue, d.Reason(), tc.allowed, want)
		}
	}
	// A move's target is never replaced.
	if _, err := p.Decide(app, acl.NewSubject("bob", nil), application.Move, "root.also-gone"); !errors.Is(err, policy.ErrUnknownQueue) {
		t.Fatalf("move to an unknown target: err %v, want ErrUnknownQueue", err)
	}
}
