package cli

import (
	"context"
	"os"
	"slices"
	"sync"

	"github.com/spf13/cobra"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/impact"
	"github.com/usherhq/usher/report"
)

const diffHelp = `Compares two configurations and lists, per queue, who gains (+) and who
loses (-) the right to submit to or administer it, before the change goes
live. OLD and NEW are read as --config is.

Rights are compared on the compiled policies, so a change shows wherever it
takes effect: through inheritance from a parent, through the partition's
adminacl (admin of every queue), and on queues or partitions that exist in
only one of the two files. Each change is shown once, on the highest queue
where it starts, with how far below it reaches.

Who is compared: every user and group named in an ACL of either file (a
user by its user entries, a group by its group entries), and everyone ("*").
When what "*" grants changes, one line says so for everyone, and the named
users and groups are not listed again. To see real people, with their
groups and "*" together, list them in a --subjects file, in the format of
a users-to-groups file (docs/identity.md), one user a line:

  # user: groups (comma separated, optional)
  alice: dev, ops
  system:serviceaccount:spark:driver:

Placement: for every partition in both files, a request that names no
queue (with the --tag tags, if any) is placed by the old and by the new
placement rules, for everyone, every named user (no groups), a member of
every named group, and each --subjects line; those who land in another
queue, or are placed by one and rejected by the other, are listed in a
"placement" block: - the old queue, + the new one (or "rejected").

Exit status: 0 when no right and no placement changes, 1 when some do, 2
on bad usage or an invalid configuration (the reason is on stderr).

Example:
  usher diff examples/teams.yaml examples/diff/teams-next.yaml

  --- examples/teams.yaml
  +++ examples/diff/teams-next.yaml
  partition default
    root
  +   submit  user sre-bot                        and 6 of the 7 queues below
  +   admin   user sre-bot                        and all 7 queues below
    root.analytics.spark
  -   submit  group system:serviceaccounts:spark
    root.ml
  +   submit  user alice                          and all 2 queues below
    root.ml.inference
  +   submit  group ml-serving
  -   submit  group system:authenticated
    root.sandbox (new queue)
  +   submit  everyone (*)
  +   admin   group platform-admins
  6 rights gained, 2 rights lost, starting in 5 queues

  usher diff old.yaml new.yaml --subjects people.txt -o json | jq '.partitions[].queues[]'
  usher diff examples/placement.yaml examples/diff/placement-next.yaml --tag namespace=ml
`

type diffFlags struct {
	subjectsFile, output string
	tags                 tagFlags
}

func newDiffCommand(env *Env) *cobra.Command {
	f := &diffFlags{tags: tagFlags{}}
	cmd, fs := newCommand(groupConfig, "diff OLD NEW [flags]", "who gains and who loses queue rights between two configurations", diffHelp)
	cmd.Args = cobra.ArbitraryArgs
	fs.Var(f.tags, "tag", "application tag `NAME=VALUE` of every request placed (for tag rules), repeatable")
	fs.StringVar(&f.subjectsFile, "subjects", "", "`FILE` of users with their groups to compare too, as a users-to-groups file: USER: GROUP, GROUP…")
	fs.StringVarP(&f.output, "output", "o", "text", "output `FORMAT`: text, json, or dot or mermaid (a Graphviz or Mermaid picture)")
	return setBody(env, cmd, func(ctx context.Context, files []string) int { return runDiff(ctx, env, f, files) })
}

func runDiff(_ context.Context, env *Env, f *diffFlags, files []string) int {
	if len(files) != 2 {
		return env.fail("want two configurations, OLD and NEW; got %d arguments", len(files))
	}
	if !slices.Contains([]string{"text", "json", "dot", "mermaid"}, f.output) {
		return env.fail("-o %q: want text, json, dot or mermaid", f.output)
	}
	opts := impact.Options{Tags: f.tags}
	if f.subjectsFile != "" {
		r, err := os.Open(f.subjectsFile)
		if err == nil {
			opts.Subjects, err = impact.ParseSubjects(f.subjectsFile, r)
			r.Close()
		}
		if err != nil {
			return env.fail("--subjects: %v", err)
		}
	}
	// The two loads are independent: read them side by side.
	var cfgs [2]*config.Config
	var errs [2]error
	var wg sync.WaitGroup
	for i, path := range files {
		wg.Go(func() { cfgs[i], errs[i] = loadConfig(env, path) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return env.fail("%s: invalid configuration:\n%v", files[i], err)
		}
	}
	res := impact.DiffConfigs(cfgs[0], cfgs[1], opts)
	res.Old, res.New = files[0], files[1]
	var err error
	switch f.output {
	case "dot", "mermaid":
		err = report.Diff(res).Write(env.Stdout, f.output)
	case "json":
		outputFlag("json").write(env, res)
	default:
		err = impact.WriteText(env.Stdout, res)
	}
	if err != nil {
		return env.fail("%v", err)
	}
	if res.Changed() {
		return ExitDenied
	}
	return ExitOK
}
