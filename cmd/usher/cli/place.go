package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/usherhq/usher/answer"
	"github.com/usherhq/usher/report"
)

const placeHelp = `Answers "where will my job go?": runs the partition's placement rules
(placementrules, as YuniKorn's scheduler runs them; docs/placement.md) for
the user, the queue the application names and its tags. A partition
without placementrules uses YuniKorn's implicit rule: the named queue
(provided), never created; without --queue either, the partition's default
queue, as the admission webhook checks it.

The first line is the queue, or "rejected" when no rule places the
application (and root.default does not exist or the user may not submit
to it) or a rule error stops placement; then the rule and why. When the
queue is not the one --queue names (read as a path under root), a fourth
line says so and why, rule by rule: the admission webhook warns with the
same. Then every rule tried, and why it placed or fell through.

-o json or -o yaml prints the decision object of docs/decision.schema.json:
"placement" (placed, queue, create, rule) and the "trail" of rules tried.

Exit status: 0 placed, 1 rejected, 2 bad usage, an invalid configuration or
a failure to find the user's groups (the reason is on stderr).

Examples:
  # the queue a pod labelled queue=root.teams.ml would run in
  usher place --config queues.yaml --user alice --groups dev --queue root.teams.ml

  # YuniKorn qualifies a marker without "root." by replacing its dots
  usher place --config queues.yaml --user alice --queue teams.ml

  # a tag rule on the namespace, as the Kubernetes shim passes it
  usher place --config queues.yaml --user system:serviceaccount:spark:driver --tag namespace=spark
`

// tagFlags collects repeated --tag k=v flags.
type tagFlags map[string]string

func (t tagFlags) String() string { return "" }

// Type is the value's name in pflag's errors.
func (t tagFlags) Type() string { return "NAME=VALUE" }

func (t tagFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	t[k] = v
	return nil
}

func newPlaceCommand(env *Env) *cobra.Command {
	d := &decisionFlags{tags: tagFlags{}, out: "text"}
	cmd, fs := newCommand(groupDecide, "place --user U [--queue Q] [--tag NAME=VALUE]... [flags]",
		"where will this user's application go? the queue placement rules choose", placeHelp)
	d.configFlags(fs)
	addPlaceFlags(fs, d)
	fs.FuncP("output", "o", pictureHelp, d.out.setPicture)
	completeQueues(cmd, "queue")
	return setBody(env, cmd, func(ctx context.Context, _ []string) int { return runPlace(ctx, env, d) })
}

func runPlace(ctx context.Context, env *Env, d *decisionFlags) int {
	req, e, err := d.load(env)
	if err != nil {
		return env.fail("%v", err)
	}
	res, err := e.Place(ctx, d.placeRequest(req, true))
	if err != nil {
		return lookupFailed(env, e.Config(), d.partition, d.queue, err)
	}
	switch {
	case d.out.picture():
		report.Place(&res).Write(env.Stdout, string(d.out))
	case d.out.machine():
		o := answer.Placed("place", &res, true)
		o.Reason = res.Reason()
		d.out.write(env, o)
	default:
		answer.Place(env.Stdout, &res)
	}
	if !res.Placed && d.queue != "" {
		if cp, err := e.Snapshot().Partition(d.partition); err == nil {
			if _, err := cp.Lookup(d.queue); err != nil {
				lookupFailed(env, e.Config(), cp.Name(), d.queue, err)
			}
		}
	}
	return decisionCode(res.Placed)
}
