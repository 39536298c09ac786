// Package cli implements the usher command. Run is the whole program, so
// tests drive it with arguments and buffers.
//
// Exit codes follow kubectl auth can-i: 0 allowed (or success, or help),
// 1 denied (or lint errors, failed policy tests, a diff with changes), 2
// bad usage, bad configuration, a failure to decide, or usher serve not
// starting (a port in use) or failing.
//
// The commands are cobra commands (root.go): each declares its flags on
// its pflag set, into a struct of its own, and its body takes that struct.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/answer"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/policy"
	"github.com/usherhq/usher/serving"
)

// Exit codes.
const (
	ExitOK     = 0
	ExitDenied = 1
	ExitUsage  = 2
)

// Env is what a command may touch.
type Env struct {
	Stdout, Stderr io.Writer
	// LookupEnv reads a variable, saying whether it is set (for the overrides,
	// set and empty is not unset): os.LookupEnv, or a test's.
	LookupEnv func(string) (string, bool)

	cmdPath string // the path of the command running, its messages' prefix
}

// decisionFlags are the flags of the decision commands.
type decisionFlags struct {
	config, partition, queue, user, groups, action string

	place bool // the placement rules choose the queue (--place, --tag)
	tags  tagFlags
	out   outputFlag // -o
}

func (d *decisionFlags) register(fs *pflag.FlagSet) {
	d.configFlags(fs)
	fs.StringVar(&d.queue, "queue", "", "queue `PATH` such as root.a.b (default: the partition's default queue)")
	fs.StringVar(&d.user, "user", "", "user `NAME` (required), e.g. alice or system:serviceaccount:spark:driver")
	fs.StringVar(&d.groups, "groups", "", "comma separated `GROUPS` the user is in; when empty the partition's resolver finds them")
	fs.StringVar(&d.action, "action", "submit", "`ACTION`: submit or admin")
	d.tags = tagFlags{}
	fs.BoolVar(&d.place, "place", false, "let the partition's placement rules choose the queue (as YuniKorn does); --queue is then the queue the application names, the provided rule's input")
	fs.Var(d.tags, "tag", "application tag `NAME=VALUE` for placement, repeatable (the Kubernetes shim passes namespace=NS); implies --place")
	d.out.register(fs)
}

// configFlags adds --config and --partition.
func (d *decisionFlags) configFlags(fs *pflag.FlagSet) {
	fs.StringVar(&d.config, "config", "", configFlagHelp)
	fs.StringVar(&d.partition, "partition", policy.DefaultPartition, "partition `NAME`")
}

func splitGroups(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, g := range strings.Split(s, ",") {
		g = strings.TrimSpace(g)
		if err := acl.ValidName(g); err != nil {
			return nil, fmt.Errorf("--groups: %w", err)
		}
		out = append(out, g)
	}
	return out, nil
}

// configFlagHelp is the help of every command's --config flag.
const configFlagHelp = "configuration `FILE`: a usher YAML file, a ConfigMap manifest (one or several), a ConfigMap's data, " +
	"Helm values with yunikornDefaults or a mounted ConfigMap directory, read as usher serve reads it, ADMISSION_CONTROLLER_* variables applied " +
	"(default: the embedded default, YuniKorn's, where root allows everyone; a line on stderr says so)"

// loadConfig reads a configuration as usher serve does. Without a path it says
// on stderr that the default is used: a forgotten --config is not the cluster's.
func loadConfig(env *Env, path string, opts ...config.Option) (*config.Config, error) {
	if path == "" {
		env.errorf("%s", defaultNote)
	}
	return config.Load(path, append(opts, config.WithEnv(env.LookupEnv))...)
}

// defaultNote is the line a command prints when --config is left out.
const defaultNote = "no --config given: using the embedded default configuration (YuniKorn's default: partition default, where root lets everyone submit and the tag rule places an application in root.NAMESPACE)"

// lookupFailed prints err and, for an unknown partition or queue,
// config.Suggest's hint, and returns ExitUsage.
func lookupFailed(env *Env, cfg *config.Config, partition, queue string, err error) int {
	env.errorf("%v", err)
	if hint := cfg.Suggest(partition, queue, err); hint != "" {
		env.errorf("%s", hint)
	}
	return ExitUsage
}

// loadServing builds what serves the configuration, as usher serve does.
func loadServing(env *Env, path string) (*serving.State, error) {
	cfg, err := loadConfig(env, path)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration:\n%v", err)
	}
	e, err := serving.Build(cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", cfg.File, err)
	}
	return e, nil
}

// request checks the request of the flags (a --tag implies --place).
func (d *decisionFlags) request() (engine.Request, error) {
	req := engine.Request{Partition: d.partition, Queue: d.queue, User: d.user}
	if d.user == "" {
		return req, errors.New("--user is required")
	}
	var err error
	if req.Groups, err = splitGroups(d.groups); err != nil {
		return req, err
	}
	if req.Action, err = policy.ParseAction(d.action); err != nil {
		return req, fmt.Errorf("--action: %v", err)
	}
	d.place = d.place || len(d.tags) > 0
	if d.place && req.Action != policy.Submit {
		return req, fmt.Errorf("--place decides a submission; --action %s is asked of a queue (leave out --place)", req.Action)
	}
	return req, nil
}

// load checks the request of the flags, then builds what serves --config.
func (d *decisionFlags) load(env *Env) (engine.Request, *serving.State, error) {
	req, err := d.request()
	if err != nil {
		return req, nil, err
	}
	e, err := loadServing(env, d.config)
	return req, e, err
}

const checkHelp = `Answers whether the user may submit to (or administer) the queue. The
first line of output is "allowed" or "denied", the second the reason.

Exit status: 0 allowed, 1 denied, 2 bad usage, an invalid configuration or
a failure to find the user's groups (the reason is on stderr).

-o json or -o yaml prints one decision object instead: allowed, reason,
queue, action, the identity with each group's source.

With --place (or a --tag), the partition's placement rules choose the
queue, as YuniKorn's scheduler does (docs/placement.md): --queue is then
the queue the application names (the provided rule's input; leave it out
when it names none) and --tag NAME=VALUE an application tag. The answer is
"allowed" when the rules place the application (they only place it where
the user may submit), the second line where and by which rule; "denied"
with every rule tried when it is rejected. Without --place, --queue is the
queue asked about and its absence means the partition's default queue.

Examples:
  usher check --config queues.yaml --queue root.test --user john --groups dev
  usher check --config queues.yaml --place --queue ml.training --user john
`

// newDecisionCommand is check or, with explain, explain.
func newDecisionCommand(env *Env, explain bool) *cobra.Command {
	name, short, help := "check", "may this user do this on this queue? prints allowed or denied", checkHelp
	if explain {
		name, short, help = "explain", "like check, and shows which queue and which ACL entry decided", explainHelp
	}
	d := &decisionFlags{}
	cmd, fs := newCommand(groupDecide, name+" --user U [--queue PATH | --place [--queue Q] [--tag NAME=VALUE]...] [flags]", short, help)
	d.register(fs)
	completeQueues(cmd, "queue")
	return setBody(env, cmd, func(ctx context.Context, _ []string) int { return runDecision(ctx, env, d, explain) })
}

func (d *decisionFlags) placeRequest(req engine.Request, explain bool) engine.PlaceRequest {
	return engine.PlaceRequest{Partition: req.Partition, Queue: req.Queue, Tags: d.tags, User: req.User, Groups: req.Groups, Explain: explain}
}

func runDecision(ctx context.Context, env *Env, d *decisionFlags, explain bool) int {
	req, e, err := d.load(env)
	if err != nil {
		return env.fail("%v", err)
	}
	cmd := map[bool]string{false: "check", true: "explain"}[explain]
	if d.place {
		res, err := e.Place(ctx, d.placeRequest(req, explain))
		if err != nil {
			return env.fail("%v", err)
		}
		switch {
		case d.out.machine():
			d.out.write(env, answer.Placed(cmd, &res, explain))
		case explain:
			answer.ExplainPlaced(env.Stdout, &res)
		default:
			answer.Verdict(env.Stdout, res.Placed, answer.PlaceReason(&res))
		}
		return decisionCode(res.Placed)
	}
	var res engine.Result
	var steps []policy.Step
	if explain {
		res, steps, err = e.Explain(ctx, req)
	} else {
		res, err = e.Check(ctx, req)
	}
	if err != nil {
		return lookupFailed(env, e.Config(), req.Partition, req.Queue, err)
	}
	switch {
	case d.out.machine():
		d.out.write(env, answer.Decided(cmd, res, steps, explain))
	case explain:
		answer.Explain(env.Stdout, res, steps)
	default:
		answer.Verdict(env.Stdout, res.Allowed, res.Reason())
	}
	return decisionCode(res.Allowed)
}

func decisionCode(allowed bool) int {
	if allowed {
		return ExitOK
	}
	return ExitDenied
}

const explainHelp = `Decides like check, then shows the identity used (each group with where
it came from) and the whole trail: every ACL that applies to the queue, in
the order they are checked (the queue first, then each parent up to root;
submit ACL before admin ACL), what each one said, and which one decided.

With --place (or a --tag), the placement trail comes first: each rule
tried, in order, and why it placed or fell through; then the identity,
then the ACL trail of the queue whose ACLs decided (the queue placed in,
or the nearest existing ancestor of a queue to be created). --queue and
--tag are as for check --place.

-o json or -o yaml prints the decision object with its "trail": the
placement rules tried (with --place), then every ACL with its queue, its
kind (submitacl, adminacl, partition adminacl), its entry, and whether it
was reached and matched (docs/decision.schema.json).

Exit status: as check.

Examples:
  usher explain --config queues.yaml --queue root.a.b --user alice
  usher explain --config queues.yaml --queue root.a.b --user alice -o json | jq '.trail.acls[] | select(.matched)'
  usher explain --config queues.yaml --place --tag namespace=spark --user alice
`
