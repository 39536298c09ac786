package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/answer"
	"github.com/usherhq/usher/application"
	"github.com/usherhq/usher/engine"
)

const appHelp = `Answers whether the user may view, modify, kill or move an application, as
YARN's application ACLs decide. The first line of output is "allowed" or
"denied", the second the reason; --explain adds every check made (with -o
json or yaml, under requirements[].checks).

Who may:
  view     the owner, admins of the application's queue or a parent, cluster
           admins (partition adminacl), application admins (applicationacls
           admin), the modify ACL and the view ACL
  modify   the same, without the view ACL
  kill     the same as modify
  move     needs all three: submit (or admin) on the queue it runs in, submit
           (or admin) on --target-queue, and the right to modify it

The application's ACLs are written in YARN's syntax, as in
mapreduce.job.acl-view-job and mapreduce.job.acl-modify-job ("users groups",
" groups", "*"; YARN ignores what follows a second space). Spark's
spark.ui.view.acls=a,b with spark.ui.view.acls.groups=g is --view-acl "a,b g".
An ACL not given takes the partition's applicationacls default; an empty
one ("") allows nobody.

Exit status: 0 allowed, 1 denied, 2 bad usage, an invalid configuration or
a failure to find the user's groups (the reason is on stderr).

Examples:
  usher app --config queues.yaml --queue root.test --owner john --user jane --action kill
  usher app --config queues.yaml --queue root.test --owner john --user bob \
            --action move --target-queue root.marketing --explain
`

// appFlags are the flags of usher app; changed says whether one was given.
type appFlags struct {
	decisionFlags
	owner, id, target, viewACL, modifyACL string
	explain                               bool
	changed                               func(name string) bool
}

func newAppCommand(env *Env) *cobra.Command {
	f := &appFlags{}
	cmd, fs := newCommand(groupDecide, "app --queue PATH --owner U --user U --action view|modify|kill|move [flags]",
		"may this user view, modify, kill or move an application? (YARN application ACLs)", appHelp)
	f.configFlags(fs)
	fs.StringVar(&f.queue, "queue", "", "`PATH` of the queue the application runs in (default: the partition's default queue)")
	fs.StringVar(&f.owner, "owner", "", "`USER` who owns (submitted) the application (required)")
	fs.StringVar(&f.id, "id", "", "application `ID`, for the reason, e.g. application_1536220066338_0001")
	fs.StringVar(&f.user, "user", "", "user `NAME` who asks (required)")
	fs.StringVar(&f.groups, "groups", "", "comma separated `GROUPS` the user is in; when empty the partition's resolver finds them")
	fs.StringVar(&f.action, "action", "", "`ACTION`: view, modify, kill or move (required)")
	fs.StringVar(&f.target, "target-queue", "", "`PATH` of the queue a move goes to (required with --action move)")
	fs.StringVar(&f.viewACL, "view-acl", "", "the application's view `ACL` (mapreduce.job.acl-view-job)")
	fs.StringVar(&f.modifyACL, "modify-acl", "", "the application's modify `ACL` (mapreduce.job.acl-modify-job)")
	fs.BoolVar(&f.explain, "explain", false, "show the identity used and every check made")
	f.out.register(fs)
	completeQueues(cmd, "queue", "target-queue")
	f.changed = fs.Changed
	return setBody(env, cmd, func(ctx context.Context, _ []string) int { return runApp(ctx, env, f) })
}

func runApp(ctx context.Context, env *Env, f *appFlags) int {
	switch {
	case f.user == "":
		return env.fail("--user is required")
	case f.owner == "":
		return env.fail("--owner is required: the user who submitted the application")
	case f.action == "":
		return env.fail("--action is required: view, modify, kill or move")
	}
	action, err := application.ParseAction(f.action)
	if err != nil {
		return env.fail("--action: %v", err)
	}
	switch {
	case action == application.Move && f.target == "":
		return env.fail("--action move needs --target-queue")
	case action != application.Move && f.target != "":
		return env.fail("--target-queue is only used with --action move, not %v", action)
	}
	groups, err := splitGroups(f.groups)
	if err != nil {
		return env.fail("%v", err)
	}
	app := application.Application{ID: f.id, Owner: f.owner, Queue: f.queue}
	for _, fl := range []struct {
		name, text string
		dst        **acl.ACL
	}{{"view-acl", f.viewACL, &app.ViewACL}, {"modify-acl", f.modifyACL, &app.ModifyACL}} {
		if !f.changed(fl.name) {
			continue
		}
		a, warns, err := acl.Parse(fl.text, acl.YARN)
		if err != nil {
			return env.fail("--%s: %v", fl.name, err)
		}
		for _, w := range warns {
			env.errorf("warning: --%s %q: %s", fl.name, fl.text, w)
		}
		*fl.dst = &a
	}
	e, err := loadServing(env, f.config)
	if err != nil {
		return env.fail("%v", err)
	}
	// The same decision /v1/access makes for an application.
	dec, in, err := e.DecideApplication(ctx, engine.AppRequest{
		Partition: f.partition, User: f.user, Groups: groups, App: app, Action: action, Target: f.target,
	})
	if err != nil {
		// The unknown queue: the application's, or a move's target.
		queue := app.Queue
		if cp, perr := e.Snapshot().Partition(f.partition); perr == nil && f.target != "" && (queue == "" || cp.Has(queue)) {
			queue = f.target
		}
		return lookupFailed(env, e.Config(), f.partition, queue, err)
	}
	if f.out.machine() {
		f.out.write(env, answer.AppDecided(dec, in, f.explain))
		return decisionCode(dec.Allowed)
	}
	answer.App(env.Stdout, dec, in, app, f.explain)
	return decisionCode(dec.Allowed)
}
