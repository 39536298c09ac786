package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/impact"
	"github.com/usherhq/usher/importer"
	"github.com/usherhq/usher/policy"
)

const importHelp = `Converts a YARN cluster's or Spark's access control settings into usher's
YAML configuration.

  usher import yarn  (--fair-scheduler F | --capacity-scheduler F) [--yarn-site F]
                     [--spark-defaults F] [--partition NAME] [-o FILE]
  usher import spark --defaults spark-defaults.conf [--into usher.yaml]
                     [--partition NAME] [-o FILE]

yarn keeps the queue hierarchy; aclSubmitApps / acl_submit_applications
become submitacl, aclAdministerApps / acl_administer_queue adminacl, and
yarn.admin.acl the partition adminacl. YARN's defaults apply, each with a
warning: a root queue without ACLs is open to all ("*"), other queues without
ACLs grant nothing, an unset yarn.admin.acl is "*", and yarn.acl.enable false
or unset (Hadoop's default) allows everything. Queue limits become YuniKorn's
resources, maxapplications, properties and the root queue's user limits;
what YuniKorn cannot express (weights, AM shares, preemption timeouts,
shares of the cluster) is a warning (docs/yarn.md has the table).

spark reads spark.acls.enable and spark.admin.acls, spark.ui.view.acls and
spark.modify.acls (each with its .groups twin) into the partition's
applicationacls admin, view and modify; with --into they are set in that
configuration, else in the embedded default one.

The YAML goes to stdout or -o FILE; warnings go to stderr as
FILE:LINE:COL: warning: message.

Exit status: 0 on success (even with warnings), 1 when an input file has
errors (each printed as FILE:LINE:COL: message), 2 on bad usage or an
unreadable file.
`

func newImportCommand(env *Env) *cobra.Command {
	cmd, _ := newCommand(groupConfig, "import yarn|spark [flags]", "turn YARN or Spark ACL settings into usher YAML", importHelp)
	cmd.AddCommand(newImportYARNCommand(env), newImportSparkCommand(env))
	return cmd // newRootCommand makes it print its help
}

type importYARNFlags struct {
	fair, capacity, site, spark, partition, out string
}

func newImportYARNCommand(env *Env) *cobra.Command {
	f := &importYARNFlags{}
	cmd, fs := newCommand("", "yarn (--fair-scheduler FILE | --capacity-scheduler FILE) [flags]",
		"a YARN scheduler's queue ACLs (Fair or Capacity Scheduler) as usher YAML", importHelp)
	fs.StringVar(&f.fair, "fair-scheduler", "", "the Fair Scheduler's allocation `FILE` (fair-scheduler.xml)")
	fs.StringVar(&f.capacity, "capacity-scheduler", "", "the Capacity Scheduler's `FILE` (capacity-scheduler.xml)")
	fs.StringVar(&f.site, "yarn-site", "", "yarn-site.xml `FILE`, for yarn.acl.enable and yarn.admin.acl")
	fs.StringVar(&f.spark, "spark-defaults", "", "spark-defaults.conf `FILE`, for the application ACLs")
	fs.StringVar(&f.partition, "partition", policy.DefaultPartition, "`NAME` of the partition written")
	fs.StringVarP(&f.out, "output", "o", "", "write the YAML to `FILE` instead of stdout")
	return setBody(env, cmd, func(context.Context, []string) int { return importYARN(env, f) })
}

func importYARN(env *Env, f *importYARNFlags) int {
	if (f.fair == "") == (f.capacity == "") {
		return env.fail("give one of --fair-scheduler and --capacity-scheduler")
	}
	files := importer.YARNFiles{Partition: f.partition}
	for _, in := range []struct {
		path string
		dst  **importer.Source
	}{{f.fair, &files.FairScheduler}, {f.capacity, &files.CapacityScheduler}, {f.site, &files.YARNSite}} {
		if in.path == "" {
			continue
		}
		s, err := importer.ReadSource(in.path)
		if err != nil {
			return env.fail("%v", err)
		}
		*in.dst = &s
	}
	c, err := importer.YARN(files)
	if err != nil {
		return importFailed(env, err, true)
	}
	if f.spark != "" {
		s, err := importer.ReadSource(f.spark)
		if err != nil {
			return env.fail("%v", err)
		}
		if err := c.AddSpark(s); err != nil {
			printDiagnostics(env, c.Warnings)
			return importFailed(env, err, false)
		}
	}
	printDiagnostics(env, c.Warnings)
	data, err := c.YAML()
	if err != nil {
		return env.fail("%v", err)
	}
	return writeImport(env, f.out, data)
}

type importSparkFlags struct {
	defaults, into, partition, out string
}

func newImportSparkCommand(env *Env) *cobra.Command {
	f := &importSparkFlags{}
	cmd, fs := newCommand("", "spark --defaults FILE [--into FILE] [flags]",
		"Spark's application ACLs (spark-defaults.conf) as usher YAML", importHelp)
	fs.StringVar(&f.defaults, "defaults", "", "spark-defaults.conf `FILE` (required)")
	fs.StringVar(&f.into, "into", "", "usher configuration `FILE` to add the application ACLs to (default: the embedded default configuration)")
	fs.StringVar(&f.partition, "partition", policy.DefaultPartition, "`NAME` of the partition that gets the application ACLs")
	fs.StringVarP(&f.out, "output", "o", "", "write the YAML to `FILE` instead of stdout")
	return setBody(env, cmd, func(context.Context, []string) int { return importSpark(env, f) })
}

func importSpark(env *Env, f *importSparkFlags) int {
	if f.defaults == "" {
		return env.fail("--defaults is required")
	}
	src, err := importer.ReadSource(f.defaults)
	if err != nil {
		return env.fail("%v", err)
	}
	base := importer.Source{Name: "<embedded default>", Data: config.DefaultYAML()}
	if f.into != "" {
		if _, err := config.Load(f.into); err != nil {
			return env.fail("--into: invalid configuration:\n%v", err)
		}
		if base, err = importer.ReadSource(f.into); err != nil {
			return env.fail("%v", err)
		}
	}
	apps, warns, err := importer.Spark(src)
	printDiagnostics(env, warns)
	if err != nil {
		return importFailed(env, err, false)
	}
	data, err := importer.MergeApplicationACLs(base, f.partition, apps)
	if err != nil {
		return env.fail("%v", err)
	}
	return writeImport(env, f.out, data)
}

func printDiagnostics(env *Env, ds []config.Diagnostic) {
	for _, d := range ds {
		fmt.Fprintln(env.Stderr, d)
	}
}

// importFailed prints an import error, and with withWarnings its warnings:
// positioned diagnostics exit 1, anything else is bad usage.
func importFailed(env *Env, err error, withWarnings bool) int {
	var invalid *config.InvalidError
	if errors.As(err, &invalid) {
		if withWarnings {
			printDiagnostics(env, invalid.Warnings)
		}
		printDiagnostics(env, invalid.Diagnostics)
		env.errorf("nothing written: %s", impact.Plural(len(invalid.Diagnostics), "error"))
		return ExitDenied
	}
	return env.fail("%v", err)
}

func writeImport(env *Env, out string, data []byte) int {
	if out == "" {
		env.Stdout.Write(data)
		return ExitOK
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return env.fail("%v", err)
	}
	env.errorf("wrote %s", out)
	return ExitOK
}
