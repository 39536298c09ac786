package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/usherhq/usher/policytest"
)

const testHelp = `Runs policy tests: files that name a configuration and list the decisions
expected of it, so a change to the queue ACLs, the placement rules or the
admission settings is checked in CI before it is rolled out. Directories
are searched, recursively, for files named *_test.yaml; a file given by
name is run whatever its name. The format is in docs/policy-tests.md.

Each case is decided by the code usher serve runs, on the configuration
read as serve reads it (ADMISSION_CONTROLLER_* variables applied):
submit and admin as usher explain, view, modify, kill and move as usher
app, place as usher place, and admission cases by the admission webhook
handler itself (an AdmissionReview in, the response checked).

One line per case, PASS or FAIL; a failure shows what was expected, what
came out, the command that reproduces it and its trail. The last line is
"N passed, M failed".

Exit status: 0 every case passed, 1 a case failed, 2 bad usage or a bad
test file (each problem as FILE:LINE:COL: message on stderr; nothing is run) or a
configuration that does not load.

Example: a test file beside examples/teams.yaml (examples/*_test.yaml has more)
  config: teams.yaml
  cases:
    - name: data scientists submit to their team's queue
      user: maria
      groups: [ml]
      queue: root.ml.training
      expect: allowed
      decidedBy: {queue: root.ml, acl: submitacl, kind: group, entry: ml}
    - name: contractors are not platform admins
      user: eve
      groups: [contractors]
      queue: root.analytics
      action: admin
      expect: denied

  usher test examples/                 # every *_test.yaml under examples/
  usher test -o junit examples/ > policy-tests.xml
`

func newTestCommand(env *Env) *cobra.Command {
	var format string
	cmd, fs := newCommand(groupConfig, "test [DIR|FILE]... [flags]",
		"run policy tests: expected decisions, placements and admission reviews (*_test.yaml)", testHelp)
	cmd.Args = cobra.ArbitraryArgs
	// Flags may come before or after the paths: usher test examples/ -o junit.
	fs.StringVarP(&format, "output", "o", "text", "output `FORMAT`: text, json or junit (JUnit XML, for CI systems)")
	return setBody(env, cmd, func(ctx context.Context, roots []string) int { return runTest(ctx, env, format, roots) })
}

func runTest(ctx context.Context, env *Env, format string, roots []string) int {
	if !slices.Contains([]string{"text", "json", "junit"}, format) {
		return env.fail("-o: want text, json or junit, not %q", format)
	}
	if len(roots) == 0 {
		roots = []string{"."}
	}
	paths, err := policytest.Find(roots)
	if err != nil {
		return env.fail("%v", err)
	}
	var files []*policytest.File
	for _, p := range paths {
		f, err := policytest.Read(p)
		if err != nil {
			fmt.Fprintln(env.Stderr, err)
			continue
		}
		files = append(files, f)
	}
	if len(files) < len(paths) {
		return ExitUsage
	}
	rep := policytest.Report{}
	for _, f := range files {
		fr, err := policytest.Run(ctx, f, env.LookupEnv)
		if err != nil {
			fmt.Fprintln(env.Stderr, err)
			return ExitUsage
		}
		rep.Add(fr)
	}
	switch format {
	case "json":
		outputFlag("json").write(env, rep)
	case "junit":
		rep.WriteJUnit(env.Stdout)
	default:
		rep.WriteText(env.Stdout)
	}
	if rep.Failed > 0 {
		return ExitDenied
	}
	return ExitOK
}
