package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/answer"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/impact"
	"github.com/usherhq/usher/policy"
	"github.com/usherhq/usher/report"
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
	d.configFlags(fs)
	fs.StringVar(&d.user, "user", "", "user `NAME` (required)")
	fs.StringVar(&d.groups, "groups", "", "comma separated `GROUPS`; when empty the partition's resolver finds them")
	// tree is the text output's old name.
	setOutput := func(s string) error {
		if s == "tree" {
			s = "text"
		}
		return d.out.setPicture(s)
	}
	fs.FuncP("output", "o", pictureHelp+" (tree: text)", setOutput)
	return setBody(env, cmd, func(ctx context.Context, _ []string) int { return runAccess(ctx, env, d) })
}

func runAccess(ctx context.Context, env *Env, d *decisionFlags) int {
	req, e, err := d.load(env)
	if err != nil {
		return env.fail("%v", err)
	}
	res, err := e.Access(ctx, req.Partition, req.User, req.Groups)
	if err != nil {
		return lookupFailed(env, e.Config(), req.Partition, "", err)
	}
	switch {
	case d.out.picture():
		report.Access(res).Write(env.Stdout, string(d.out))
		return ExitOK
	case d.out.machine():
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
	rights, mark := decision.QueueRightsOf(queues), map[bool]string{true: "yes", false: "-"}
	for i, q := range queues {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", decision.TreeLabel(rights, i), mark[q.Submit.Allowed], mark[q.Admin.Allowed], grantedBy(q))
	}
	tw.Flush()
	return ExitOK
}

func grantedBy(q policy.QueueAccess) string {
	d := q.Admin
	if !d.Allowed {
		d = q.Submit
	}
	if !d.Allowed {
		return ""
	}
	who := d.By.Match.Kind.String() + " " + d.By.Match.Name
	if d.By.Match.Kind == acl.MatchWildcard {
		who = `"*"`
	}
	if d.By.ACL == policy.ClusterAdminACL {
		return who + " in the partition adminacl"
	}
	return fmt.Sprintf("%s in %s of %s", who, d.By.ACL, d.By.Queue)
}

const lintHelp = `Checks configurations and prints each problem as
FILE:LINE:COL: message (warnings say "warning:"). Each PATH is read as
usher serve reads --config: problems inside a ConfigMap manifest's
queues.yaml block are given at the manifest's own lines, the ..data links
of a mounted ConfigMap are followed, and problems with the
ADMISSION_CONTROLLER_* variables are given as "environment: VARIABLE: …".

It catches syntax errors, unknown keys, invalid queue and user names, ACLs
with more than one space, admission settings that name a partition, queue
or scheduler the file does not have, and warns about traps: a group-only
ACL whose leading space YAML dropped because it was not quoted, "*" mixed
with names, duplicate entries, names differing only in case, leaf queues
and parent-only subtrees nobody can submit to, placement rules that can
never place, users-to-groups file lines skip keeps unread, unknownuser
left unsaid where a directory is configured, and trust patterns not
anchored at both ends (with the pattern to write instead). Notes ("note:
webhook only: …") name each setting only usher's webhook enforces, which
the native floor of "usher native" cannot (docs/native.md); they never
fail. Every problem is reported in one run. What usher serve still loads
but a later release refuses (docs/upgrade.md: a users-to-groups file that
is not a regular file, say) is an error here. At most 100 errors and 100
warnings are listed, then how many more there are.

With -o json the diagnostics of every PATH are one JSON object on stdout,
{"errors": N, "warnings": N, "diagnostics": [{"file", "line", "column",
"severity", "code", "message", "suggestion"}]}; with -o sarif a SARIF
2.1.0 log, as GitHub code scanning reads it. The codes and both shapes
are in docs/lint.md. The summary line of each PATH goes to stderr
in every format.

Exit status: 1 when any PATH has errors (with --strict: errors or
warnings), 0 otherwise, 2 on bad usage or a PATH that cannot be read.

Examples:
  usher lint queues.yaml
  usher lint deploy/configmap.yaml
  usher lint /etc/usher            # a mounted ConfigMap
  usher lint a.yaml b.yaml configs/
  usher lint --strict -o sarif deploy/configmap.yaml > usher.sarif
`

func newLintCommand(env *Env) *cobra.Command {
	cmd, fs := newCommand(groupConfig, "lint PATH... [flags]",
		"check configurations (files, ConfigMap manifests, mounted ConfigMaps): FILE:LINE:COL: message", lintHelp)
	cmd.Args = cobra.ArbitraryArgs
	var l lintRun
	fs.BoolVar(&l.strict, "strict", false, "warnings fail too: exit 1 when any PATH has errors or warnings (for CI)")
	fs.StringVarP(&l.output, "output", "o", "text", "output `FORMAT`: text (FILE:LINE:COL: message), json or sarif (SARIF 2.1.0); docs/lint.md")
	return setBody(env, cmd, func(ctx context.Context, args []string) int { return l.run(env, args) })
}

// lintRun is one usher lint: its flags and the counts so far.
type lintRun struct {
	strict      bool
	output      string
	nerr, nwarn int
	diags       []config.Diagnostic
}

func (l *lintRun) run(env *Env, args []string) int {
	if !slices.Contains([]string{"text", "json", "sarif"}, l.output) {
		return env.fail("-o: want text, json or sarif, not %q", l.output)
	}
	if len(args) == 0 {
		return env.fail("want at least one PATH (a file, a ConfigMap manifest or a mounted ConfigMap directory)\nRun \"%s --help\" for usage.", env.cmdPath)
	}
	code := ExitOK
	l.diags = []config.Diagnostic{}
	for _, path := range args {
		code = max(code, l.one(env, path))
	}
	switch l.output {
	case "json":
		outputFlag("json").write(env, map[string]any{"errors": l.nerr, "warnings": l.nwarn, "diagnostics": l.diags})
	case "sarif":
		outputFlag("json").write(env, sarif(l.diags))
	}
	return code
}

// one lints the configuration at path and prints a summary line.
func (l *lintRun) one(env *Env, path string) int {
	cfg, err := loadConfig(env, path, config.Strict())
	var invalid *config.InvalidError
	var diags []config.Diagnostic
	switch {
	case errors.As(err, &invalid):
		diags = append(slices.Clone(invalid.Diagnostics), invalid.Warnings...)
	case err != nil:
		return env.fail("%v", err)
	default:
		diags = append(slices.Clone(cfg.Warnings), cfg.WebhookOnly...)
	}
	// Errors, warnings and notes come sorted apart; interleave them.
	var n [3]int
	for _, d := range config.Sort(diags) {
		if l.output == "text" {
			fmt.Fprintln(env.Stdout, d)
		}
		n[d.Severity]++
	}
	nerr, nwarn := n[config.Error], n[config.Warning]
	l.nerr, l.nwarn, l.diags = l.nerr+nerr, l.nwarn+nwarn, append(l.diags, diags...)
	switch {
	case nerr > 0:
		fmt.Fprintf(env.Stderr, "%s: %s, %s\n", path, impact.Plural(nerr, "error"), impact.Plural(nwarn, "warning"))
		return ExitDenied
	case nwarn > 0 && l.strict:
		fmt.Fprintf(env.Stderr, "%s: valid, %s (--strict: warnings fail)\n", path, impact.Plural(nwarn, "warning"))
		return ExitDenied
	case nwarn > 0:
		fmt.Fprintf(env.Stderr, "%s: valid, %s\n", path, impact.Plural(nwarn, "warning"))
	default:
		fmt.Fprintf(env.Stderr, "%s: valid, no problems found\n", path)
	}
	return ExitOK
}
