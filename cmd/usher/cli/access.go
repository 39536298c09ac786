package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/usherhq/usher/answer"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/policy"
)

const accessHelp = `Lists every queue of a partition with what the user may do there, like
YARN's "mapred queue -showacls": a tree to read, or JSON or YAML for
scripts (-o json|yaml: the decision object of docs/decision.schema.json,
the queues under "queues").

Exit status: 0 on success, 2 on bad usage or an invalid configuration.

Examples:
  usher access --config queues.yaml --user john --groups dev
  usher access --config queues.yaml --user john -o json | jq '.queues[] | select(.submit) | .queue'
`

func newAccessCommand(env *Env) *cobra.Command {
	d := &decisionFlags{out: "text"}
	cmd, fs := newCommand(groupDecide, "access --user U [--groups G1,G2] [flags]",
		"every queue of a partition with the user's submit and admin rights", accessHelp)
	fs.StringVar(&d.config, "config", "", configFlagHelp)
	fs.StringVar(&d.partition, "partition", policy.DefaultPartition, "partition `NAME`")
	fs.StringVar(&d.user, "user", "", "user `NAME` (required)")
	fs.StringVar(&d.groups, "groups", "", "comma separated `GROUPS`; when empty the partition's resolver finds them")
	// tree is the text output's old name.
	setOutput := func(s string) error {
		if s == "tree" {
			s = "text"
		}
		return d.out.Set(s)
	}
	fs.FuncP("output", "o", outputHelp+" (tree: text)", setOutput)
	return setBody(env, cmd, func(ctx context.Context, _ []string) int { return runAccess(ctx, env, d) })
}

func runAccess(ctx context.Context, env *Env, d *decisionFlags) int {
	req, ok := d.request(env)
	if !ok {
		return ExitUsage
	}
	e, ok := loadServing(env, d.config)
	if !ok {
		return ExitUsage
	}
	res, err := e.Access(ctx, req.Partition, req.User, req.Groups)
	if err != nil {
		printLookupError(env, e.Config(), req.Partition, "", err)
		return ExitUsage
	}
	if d.out.machine() {
		d.out.write(env, answer.Queues(res))
		return ExitOK
	}
	in, queues := res.Identity, res.Queues
	groups := make([]string, len(in.Groups))
	for i, g := range in.Groups {
		groups[i] = fmt.Sprintf("%s (%s)", g, in.SourceOf(i))
	}
	if len(groups) == 0 {
		groups = []string{"(none)"}
	}
	fmt.Fprintf(env.Stdout, "partition %s, user %s, groups %s\n\n", d.partition, in.User, strings.Join(groups, ", "))
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tSUBMIT\tADMIN\tGRANTED BY")
	rights := decision.QueueRightsOf(queues)
	for i, q := range queues {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", decision.TreeLabel(rights, i), yesNo(q.Submit.Allowed), yesNo(q.Admin.Allowed), grantedBy(q))
	}
	tw.Flush()
	return ExitOK
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "-"
}

func grantedBy(q policy.QueueAccess) string {
	d := q.Admin
	if !d.Allowed {
		d = q.Submit
	}
	if !d.Allowed {
		return ""
	}
	who := d.By.Match.Name
	switch d.By.Match.Kind.String() {
	case "wildcard":
		who = `"*"`
	case "group":
		who = "group " + who
	default:
		who = "user " + who
	}
	where := d.By.Queue
	if d.By.ACL == policy.ClusterAdminACL {
		return who + " in the partition adminacl"
	}
	return fmt.Sprintf("%s in %s of %s", who, d.By.ACL, where)
}

const lintHelp = `Checks configurations and prints each problem as
FILE:LINE:COL: message (warnings say "warning:"). Each PATH is read exactly
as usher serve and the other commands read --config: a usher YAML file, a
ConfigMap manifest (problems inside its queues.yaml block are given at the
manifest's own lines), or the directory where a ConfigMap is mounted (the
..data links kubelet makes are followed), with the ADMISSION_CONTROLLER_*
environment variables applied (problems with them are given as
"environment: VARIABLE: …").

It catches syntax errors, unknown keys, invalid queue and user names, ACLs
with more than one space, admission settings that name a partition, queue
or scheduler the file does not have, and warns about traps: a group-only
ACL whose leading space YAML dropped because it was not quoted, "*" mixed
with names, duplicate entries, names differing only in case, leaf queues
nobody can submit to, and trust patterns not anchored at both ends (with
the pattern to write instead). What usher serve still loads but a later
release refuses (docs/upgrade.md: a users-to-groups file that is not a
regular file, say) is an error here. At most 100 errors and 100 warnings
are listed, then how many more there are.

Exit status: 1 when any PATH has errors, 0 when there are only warnings or
none, 2 on bad usage or a PATH that cannot be read.

Examples:
  usher lint queues.yaml
  usher lint deploy/configmap.yaml
  usher lint /etc/usher            # a mounted ConfigMap
  usher lint a.yaml b.yaml configs/
`

func newLintCommand(env *Env) *cobra.Command {
	cmd, _ := newCommand(groupConfig, "lint PATH...",
		"check configurations (files, ConfigMap manifests, mounted ConfigMaps): FILE:LINE:COL: message", lintHelp)
	cmd.Args = cobra.ArbitraryArgs
	return setBody(env, cmd, func(ctx context.Context, args []string) int { return runLint(ctx, env, args) })
}

func runLint(_ context.Context, env *Env, args []string) int {
	if len(args) == 0 {
		env.errorf("want at least one PATH (a file, a ConfigMap manifest or a mounted ConfigMap directory)\nRun \"%s --help\" for usage.", env.commandPath())
		return ExitUsage
	}
	code := ExitOK
	for _, path := range args {
		code = max(code, lintOne(env, path))
	}
	return code
}

// lintOne lints the configuration at path and prints its diagnostics and
// a summary line.
func lintOne(env *Env, path string) int {
	cfg, err := loadConfig(env, path, config.Strict())
	var invalid *config.InvalidError
	var diags []config.Diagnostic
	switch {
	case errors.As(err, &invalid):
		diags = append(slices.Clone(invalid.Diagnostics), invalid.Warnings...)
	case err != nil:
		env.errorf("%v", err)
		return ExitUsage
	default:
		diags = slices.Clone(cfg.Warnings)
	}
	// Errors and warnings come sorted apart; interleave them by file (in
	// the order files first appear), line and column.
	rank := map[string]int{}
	for _, d := range diags {
		if _, ok := rank[d.File]; !ok {
			rank[d.File] = len(rank)
		}
	}
	slices.SortStableFunc(diags, func(a, b config.Diagnostic) int {
		if a.File != b.File {
			return rank[a.File] - rank[b.File]
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	nerr := 0
	for _, d := range diags {
		fmt.Fprintln(env.Stdout, d)
		if d.Severity == config.Error {
			nerr++
		}
	}
	nwarn := len(diags) - nerr
	switch {
	case nerr > 0:
		fmt.Fprintf(env.Stderr, "%s: %s, %s\n", path, plural(nerr, "error"), plural(nwarn, "warning"))
		return ExitDenied
	case nwarn > 0:
		fmt.Fprintf(env.Stderr, "%s: valid, %s\n", path, plural(nwarn, "warning"))
	default:
		fmt.Fprintf(env.Stderr, "%s: valid, no problems found\n", path)
	}
	return ExitOK
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
