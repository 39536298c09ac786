package cli

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/usherhq/usher/impact"
	"github.com/usherhq/usher/policy"
	"github.com/usherhq/usher/report"
)

// pictureHelp is the help of -o of the commands that also draw.
const pictureHelp = outputHelp + "; dot or mermaid: the answer as a Graphviz or Mermaid picture"

// setPicture is Set, also taking dot and mermaid.
func (o *outputFlag) setPicture(s string) error {
	if s == "dot" || s == "mermaid" {
		*o = outputFlag(s)
		return nil
	}
	return o.Set(s)
}

func (o outputFlag) picture() bool { return o == "dot" || o == "mermaid" }

const whoCanHelp = `Lists every ACL entry that lets someone submit to (or administer) a queue,
in the order a decision checks them: the queue's submitacl and adminacl,
its parents', then the partition's adminacl (only adminacls for --action
admin). A group's members are listed when the partition's resolver can
list them (file, test), never the groups a request carries.

Exit status: 0 on success, 2 on bad usage, an invalid configuration or an
unknown queue.

Example:
  usher who-can --config queues.yaml --queue root.ml --action admin -o json
`

func newWhoCanCommand(env *Env) *cobra.Command {
	d := &decisionFlags{out: "text"}
	cmd, fs := newCommand(groupDecide, "who-can --queue Q [--action submit|admin] [flags]",
		"every user and group that may submit to (or administer) a queue, and through which ACL", whoCanHelp)
	d.configFlags(fs)
	fs.StringVar(&d.queue, "queue", "", "queue `PATH` such as root.a.b (required)")
	fs.StringVar(&d.action, "action", "submit", "`ACTION`: submit or admin")
	fs.VarP(&d.out, "output", "o", "output `FORMAT`: text, json or yaml")
	completeQueues(cmd, "queue")
	return setBody(env, cmd, func(context.Context, []string) int { return runWhoCan(env, d) })
}

func runWhoCan(env *Env, d *decisionFlags) int {
	action, err := policy.ParseAction(d.action)
	switch {
	case err != nil:
		return env.fail("--action: %v", err)
	case d.queue == "":
		return env.fail("--queue is required")
	}
	cfg, err := loadConfig(env, d.config)
	if err != nil {
		return env.fail("invalid configuration:\n%v", err)
	}
	who, err := report.Who(cfg, d.partition, d.queue, action)
	if err != nil {
		return lookupFailed(env, cfg, d.partition, d.queue, err)
	}
	if d.out.machine() {
		d.out.write(env, who)
	} else {
		who.Text(env.Stdout)
	}
	return ExitOK
}

const reportHelp = `Writes one HTML page on stdout, with no script and nothing fetched: the
queue tree with who may submit to and administer each queue (who-can);
with --against OLD, the rights gained (green) and lost (red) from OLD to
--config (diff); with --user, where the user's application goes (place).

Exit status: 0 on success, 2 on bad usage or an invalid configuration.

Example:
  usher report --config queues.yaml --against old.yaml --user alice > report.html
`

func newReportCommand(env *Env) *cobra.Command {
	d := &decisionFlags{tags: tagFlags{}, action: "submit"}
	var against string
	cmd, fs := newCommand(groupConfig, "report [--against OLD] [--user U [--groups G] [--queue Q]] [flags] > report.html",
		"an HTML page of the queue tree, who may do what, a rights diff and a placement", reportHelp)
	d.configFlags(fs)
	fs.StringVar(&against, "against", "", "the old configuration `FILE` to show the rights diff from (default: no diff)")
	addPlaceFlags(fs, d)
	return setBody(env, cmd, func(ctx context.Context, _ []string) int { return runReport(ctx, env, d, against) })
}

// addPlaceFlags adds the flags of a placement question.
func addPlaceFlags(fs *pflag.FlagSet, d *decisionFlags) {
	fs.StringVar(&d.queue, "queue", "", "the `QUEUE` the application names (the provided rule's input), e.g. root.a.b or a.b")
	fs.StringVar(&d.user, "user", "", "user `NAME`")
	fs.StringVar(&d.groups, "groups", "", "comma separated `GROUPS` the user is in; when empty the partition's resolver finds them")
	fs.Var(d.tags, "tag", "application tag `NAME=VALUE`, repeatable (the Kubernetes shim passes namespace=NS)")
}

func runReport(ctx context.Context, env *Env, d *decisionFlags, against string) int {
	e, err := loadServing(env, d.config)
	if err != nil {
		return env.fail("%v", err)
	}
	page := report.Page{Config: e.Config(), Partition: d.partition}
	if against != "" {
		old, err := loadConfig(env, against)
		if err != nil {
			return env.fail("--against %s: invalid configuration:\n%v", against, err)
		}
		page.Diff = impact.DiffConfigs(old, e.Config(), impact.Options{})
		page.Diff.Old, page.Diff.New = against, e.Config().File
	}
	if d.user != "" {
		req, err := d.request()
		if err != nil {
			return env.fail("%v", err)
		}
		res, err := e.Place(ctx, d.placeRequest(req, true))
		if err != nil {
			return lookupFailed(env, e.Config(), d.partition, d.queue, err)
		}
		page.Place = &res
	}
	if err := page.Write(env.Stdout); err != nil {
		return lookupFailed(env, e.Config(), d.partition, "", err)
	}
	return ExitOK
}
