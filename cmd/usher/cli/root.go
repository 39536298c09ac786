package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/internal/suggest"
)

// Run runs the usher command with args (without the program name) and
// returns the exit code. The conventions are kubectl's: help goes to stdout
// with exit status 0; a failure to stderr, prefixed with the command's path;
// a mistyped command or flag is answered with the nearest ones. Flags are
// --long; -o is the one shorthand.
func Run(ctx context.Context, env *Env, args []string) int {
	// A copy: concurrent Runs sharing one Env do not race on the command path.
	e := *env
	env = &e
	root := newRootCommand(env)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var code exitCode
	if errors.As(err, &code) {
		return int(code)
	}
	// Cobra and pflag refused the command line.
	path := "usher"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	msg := strings.TrimRight(err.Error(), "\n")
	fmt.Fprintf(env.Stderr, "%s: %s\nRun \"%s --help\" for usage.\n", path, msg, path)
	return ExitUsage
}

// exitCode is what a command's body returns to Run through cobra: the
// body has printed its answer or its reason already.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// errorf prints a line on stderr, prefixed with the command's path ("usher check: ").
func (env *Env) errorf(format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	fmt.Fprintf(env.Stderr, "%s: %s", cmp.Or(env.cmdPath, "usher"), msg)
}

// fail prints a line as errorf does and returns ExitUsage.
func (env *Env) fail(format string, a ...any) int {
	env.errorf(format, a...)
	return ExitUsage
}

// Command groups, as kubectl groups its commands in its help.
const (
	groupDecide = "decide"
	groupConfig = "config"
	groupServe  = "serve"
)

const rootHelp = `usher: queue ACLs, trustworthy submitter identities and directory groups
for multi-tenant batch queues.

Every command reads a configuration the same way, as usher serve does: a
usher YAML file, a ConfigMap manifest (yunikorn-defaults and
yunikorn-configs together are merged, the second winning), a ConfigMap's
data written as YAML, the Helm chart's values with yunikornDefaults, or the
directory where a ConfigMap is mounted, with the ADMISSION_CONTROLLER_* environment variables
(BYPASS_AUTH, TRUST_CONTROLLERS, SYSTEM_USERS, EXTERNAL_USERS,
EXTERNAL_GROUPS) overriding its admission settings.

Exit status: 0 allowed (or success), 1 denied (or lint errors, and with
lint --strict warnings, failed policy tests, a diff with changes), 2 bad
usage, a bad configuration or a failure to decide (the reason is on
stderr).`

const rootExamples = `  usher check   --config queues.yaml --queue root.test --user sue
  usher explain --config queues.yaml --queue root.test --user john --groups dev
  usher access  --config queues.yaml --user john --groups dev
  usher lint    queues.yaml
  usher serve   --config queues.yaml --webhook-auth none   # local use; in a cluster: --webhook-client-ca
  source <(usher completion bash)`

// newRootCommand builds the usher command tree, printing on env's writers.
func newRootCommand(env *Env) *cobra.Command {
	root := &cobra.Command{
		Use:     "usher",
		Short:   "queue ACLs, trustworthy submitter identities and directory groups for batch queues",
		Long:    rootHelp,
		Example: rootExamples,
		// Run prints errors (with the command's prefix) and the usage
		// hint; a command's body prints its own.
		SilenceErrors: true,
		SilenceUsage:  true,
		// No Args: cobra's own check answers an unknown command with
		// the nearest ones, and bare usher prints the help.
	}
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	// usher --version is usher's own flag, not cobra's: cobra's would add
	// -v (kubectl's verbosity) and need a version template, whose
	// text/template defeats the linker's dead code elimination (14 MB).
	version := root.Flags().Bool("version", false, "print the version, the commit and the Go version")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if *version {
			fmt.Fprint(env.Stdout, versionText(CurrentBuild()))
			return nil
		}
		return cmd.Help()
	}
	root.SetFlagErrorFunc(flagError)
	root.SetUsageFunc(usage)
	root.AddGroup(
		&cobra.Group{ID: groupDecide, Title: "Decisions (exit 0 allowed, 1 denied, 2 failure to decide):"},
		&cobra.Group{ID: groupConfig, Title: "Configurations and policy tests:"},
		&cobra.Group{ID: groupServe, Title: "Service:"},
	)
	root.AddCommand(
		newDecisionCommand(env, false), newDecisionCommand(env, true), newPlaceCommand(env), newAccessCommand(env), newAppCommand(env),
		newLintCommand(env), newTestCommand(env), newDiffCommand(env), newImportCommand(env), newSplitCommand(env), newWebhookCommand(env), newNativeCommand(env),
		newServeCommand(env), newDoctorCommand(env), newVersionCommand(env), newWhoCanCommand(env), newReportCommand(env),
	)
	// Cobra adds these when it runs; added now, they are in the tree
	// that tests walk.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	// Cobra's help command, but an unknown command is a usage error.
	help, _, _ := root.Find([]string{"help"})
	help.Short, help.Args = "help about any command", cobra.ArbitraryArgs
	help.Long = "Help prints the help of any command: usher help check is usher check --help."
	help.RunE = func(c *cobra.Command, args []string) error {
		cmd, rest, err := c.Root().Find(args)
		if err != nil {
			return err
		}
		if len(rest) > 0 {
			return unknownCommand(cmd, rest[0])
		}
		cmd.InitDefaultHelpFlag() // as cobra adds it to the command it runs
		return cmd.Help()
	}
	// A command that only groups others (import, completion) prints its help when
	// given none, and refuses an unknown one, as usher itself does.
	for _, c := range root.Commands() {
		if c.HasSubCommands() && !c.Runnable() {
			c.Args = noArgs
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
	}
	return root
}

// usageWidth is the width flag descriptions are wrapped to in the help.
const usageWidth = 100

// usage prints c's usage as cobra does, the flag descriptions wrapped to usageWidth.
func usage(c *cobra.Command) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		fmt.Fprintf(&b, "\n  %s", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n  %s [command]", c.CommandPath())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\n\nExamples:\n%s", c.Example)
	}
	if c.HasAvailableSubCommands() {
		list := func(title, group string) {
			var lines []string
			for _, sub := range c.Commands() {
				if sub.GroupID == group && (sub.IsAvailableCommand() || sub.Name() == "help") {
					lines = append(lines, fmt.Sprintf("\n  %-*s %s", sub.NamePadding(), sub.Name(), sub.Short))
				}
			}
			if len(lines) > 0 {
				fmt.Fprintf(&b, "\n\n%s%s", title, strings.Join(lines, ""))
			}
		}
		for _, g := range c.Groups() {
			list(g.Title, g.ID)
		}
		title := "Available Commands:"
		if len(c.Groups()) > 0 {
			title = "Other Commands:"
		}
		list(title, "")
	}
	if c.HasAvailableLocalFlags() {
		fmt.Fprintf(&b, "\n\nFlags:\n%s", strings.TrimRight(c.LocalFlags().FlagUsagesWrapped(usageWidth), " \n"))
	}
	if c.HasAvailableInheritedFlags() {
		fmt.Fprintf(&b, "\n\nGlobal Flags:\n%s", strings.TrimRight(c.InheritedFlags().FlagUsagesWrapped(usageWidth), " \n"))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\n\nUse \"%s [command] --help\" for more information about a command.", c.CommandPath())
	}
	b.WriteString("\n")
	_, err := fmt.Fprint(c.OutOrStdout(), b.String())
	return err
}

// newCommand returns a command named by the first word of use, in group,
// whose flags the caller adds to fs and whose body it sets with setBody.
func newCommand(group, use, short, long string) (*cobra.Command, *pflag.FlagSet) {
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Long:    strings.TrimRight(long, "\n"),
		GroupID: group,
		Args:    noArgs,
	}
	cmd.Flags().SortFlags = false
	return cmd, cmd.Flags()
}

// setBody makes b the work of cmd: the command path of env's messages is
// cmd's, and b's exit code is Run's.
func setBody(env *Env, cmd *cobra.Command, b func(ctx context.Context, args []string) int) *cobra.Command {
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		env.cmdPath = cmd.CommandPath()
		if code := b(cmd.Context(), args); code != ExitOK {
			return exitCode(code)
		}
		return nil
	}
	return cmd
}

// noArgs refuses positional arguments: every flag starts with --.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasAvailableSubCommands() {
		return unknownCommand(cmd, args[0])
	}
	return fmt.Errorf("unexpected argument %q (flags start with --)", args[0])
}

// unknownCommand is the error of a mistyped subcommand of cmd.
func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // what cobra sets on the root
	}
	var names []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	if len(names) > 0 {
		msg += fmt.Sprintf(" for %q: want %s", cmd.CommandPath(), suggest.Or(names))
	}
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += didYouMean(s)
	}
	return errors.New(msg)
}

// didYouMean is cobra's way of offering the nearest names.
func didYouMean(names []string) string {
	return "\n\nDid you mean this?\n\t" + strings.Join(names, "\n\t")
}

// flagError adds the nearest flags of cmd to an unknown flag's error
// (pflag does not suggest), also for a single-dash long flag ("-config").
func flagError(cmd *cobra.Command, err error) error {
	var notExist *pflag.NotExistError
	if !errors.As(err, &notExist) {
		return err
	}
	typed := notExist.GetSpecifiedName()
	if sh := notExist.GetSpecifiedShortnames(); sh != "" {
		// -config or -config=x: the whole word after the dash.
		typed, _, _ = strings.Cut(sh, "=")
	}
	if s := nearestFlags(cmd.Flags(), typed); len(s) > 0 {
		return errors.New(err.Error() + didYouMean(s))
	}
	return err
}

// nearestFlags returns the flags of fs nearest to typed, as --name: the
// ones at the smallest edit distance when it is at most 2 (or a third of
// the name), else those of which typed is a prefix.
func nearestFlags(fs *pflag.FlagSet, typed string) []string {
	typed = strings.ToLower(typed)
	if typed == "" {
		return nil
	}
	best := max(2, len(typed)/3) + 1
	var near, prefixed []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		switch d := suggest.Distance(typed, f.Name); {
		case d < best:
			best, near = d, []string{"--" + f.Name}
		case d == best:
			near = append(near, "--"+f.Name)
		}
		if len(typed) >= 2 && strings.HasPrefix(f.Name, typed) {
			prefixed = append(prefixed, "--"+f.Name)
		}
	})
	if len(near) == 0 {
		near = prefixed
	}
	slices.Sort(near)
	return near
}

// completeQueues completes cmd's queue flags with the queues of --partition in --config.
func completeQueues(cmd *cobra.Command, flags ...string) {
	complete := func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		path, _ := cmd.Flags().GetString("config")
		partition, _ := cmd.Flags().GetString("partition")
		if path == "" {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cfg, err := config.Load(path, config.WithEnv(os.LookupEnv))
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cp, err := cfg.Snapshot.Partition(partition)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		out := slices.DeleteFunc(cp.Queues(), func(q string) bool { return !strings.HasPrefix(q, toComplete) })
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	for _, name := range flags {
		// The only error is an unknown flag: a bug caught by the tests.
		if err := cmd.RegisterFlagCompletionFunc(name, complete); err != nil {
			panic(err)
		}
	}
}
