package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/usherhq/usher/native"
)

const nativeHelp = `Print, as YAML, the native floor of a configuration: admission policies
the API server runs itself, which hold while usher's webhook is away
(docs/native.md). It reads exactly what "usher serve" would (the same
loader, ADMISSION_CONTROLLER_* variables included):
  - a ValidatingAdmissionPolicy and its binding that refuse a forged,
    malformed or case-variant user.info on CREATE and any change of it on
    UPDATE, status writes and Bindings, with the trust rules of
    accessControl and the namespace filters in CEL;
  - where the webhook stamps the groups the API server gave (the
    partition's groups: given, or stampGroups: given), a
    MutatingAdmissionPolicy and its binding that stamp user.info on CREATE
    byte for byte as the webhook does (reinvocationPolicy: Never).
What the configuration asks that only the webhook does (directory groups,
queue ACLs, placement, the kill rule, evictions, delegation) is listed on
stderr as "webhook only", at FILE:LINE of each setting. A configuration past
the floor's CEL limits (docs/limits.md) is refused.

Examples:
  usher native --config usher.yaml | kubectl apply -f -
  usher native --config deploy/configmap.yaml > floor.yaml
`

func newNativeCommand(env *Env) *cobra.Command {
	var path string
	cmd, fs := newCommand(groupConfig, "native [--config FILE]",
		"print the API server's own admission policies that stamp and guard user.info (the native floor)", nativeHelp)
	fs.StringVar(&path, "config", "", configFlagHelp)
	return setBody(env, cmd, func(_ context.Context, _ []string) int {
		cfg, err := loadConfig(env, path)
		if err != nil {
			return env.fail("invalid configuration:\n%v", err)
		}
		f, err := native.Compile(cfg.Admission, cfg.FloorStamps())
		if err != nil {
			return env.fail("%v", err)
		}
		for _, d := range cfg.WebhookOnly {
			env.errorf("%s", d)
		}
		return printYAML(env, f.Objects()...)
	})
}
