package cli

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/usherhq/usher/config"
)

const splitHelp = `Splits a configuration into the two keys of a ConfigMap, so that YuniKorn's
scheduler can read its own: queues.yaml (or the key service.policyGroup
names), which YuniKorn reads, refusing the whole file for a key it does not
know, and usher.yaml, which only usher reads and merges into the partitions
of the same name. usher.yaml gets the admissionController block and each
partition's adminacl, applicationacls, defaultqueue, groups and
usergroupresolver (one with more than YuniKorn's type); everything else stays.
docs/yunikorn.md says why.

FILE is any configuration usher reads (a usher YAML file, a ConfigMap
manifest, Helm values, a mounted ConfigMap). The result is the ConfigMap's
data written as YAML, on stdout or in -o FILE: put both keys in the
ConfigMap that holds the partitions (its other keys stay as they are), and
point usher at it. What moved is listed on stderr.

Exit status: 0 on success, 1 when FILE has errors (each printed as
FILE:LINE:COL: message), 2 on bad usage or an unreadable file.`

const splitExamples = `  # YuniKorn's ConfigMap, whose queues.yaml YuniKorn refuses for usher's keys
  kubectl get configmap -n yunikorn yunikorn-configs -o yaml > cm.yaml
  usher split cm.yaml -o data.yaml
  # then replace the ConfigMap's data keys with those of data.yaml, and check:
  usher lint cm.yaml

  # a usher YAML file, as the data of a new ConfigMap
  usher split queues.yaml`

func newSplitCommand(env *Env) *cobra.Command {
	cmd, fs := newCommand(groupConfig, "split FILE [-o FILE]",
		"split a configuration into queues.yaml, which YuniKorn reads, and usher.yaml", splitHelp)
	cmd.Example = splitExamples
	cmd.Args = cobra.ArbitraryArgs
	out := fs.StringP("output", "o", "", "write the ConfigMap's data to `FILE` instead of stdout")
	return setBody(env, cmd, func(_ context.Context, args []string) int {
		if len(args) != 1 {
			return env.fail("want one FILE, the configuration to split; got %d arguments\nRun \"%s --help\" for usage.", len(args), env.cmdPath)
		}
		data, moved, err := config.Split(args[0])
		if err != nil {
			return importFailed(env, err, true)
		}
		if moved == nil {
			env.errorf("nothing to move: YuniKorn's scheduler reads %s as it is", args[0])
		} else {
			env.errorf("moved to %s: %s", config.UsherKey, strings.Join(moved, "; "))
		}
		return writeImport(env, *out, data)
	})
}
