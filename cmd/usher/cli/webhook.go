package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/usherhq/usher/admission/settings"
)

const webhookHelp = `Print the matchCondition that keeps usher's webhook registrations in step
with a configuration's namespace settings (bypassNamespaces,
processNamespaces, with the ADMISSION_CONTROLLER_* overrides): paste it
into every webhook of deploy/webhooks.yaml, replacing the one named
usher-namespaces. The API server then never calls usher for a request in a
namespace usher leaves alone, so usher's outage cannot block it
(docs/security.md, "Blast radius").`

func newWebhookCommand(env *Env) *cobra.Command {
	var path string
	cmd, fs := newCommand(env, groupConfig, "webhook --config FILE",
		"the matchCondition that keeps the webhook registrations in step with the namespace settings", webhookHelp)
	fs.StringVar(&path, "config", "", configFlagHelp)
	return setBody(env, cmd, func(ctx context.Context, _ []string) int { return runWebhook(ctx, env, path) })
}

func runWebhook(_ context.Context, env *Env, path string) int {
	cfg, err := loadConfig(env, path)
	if err != nil {
		env.errorf("invalid configuration:\n%v", err)
		return ExitUsage
	}
	var c settings.Config
	if cfg.Admission != nil {
		c = cfg.Admission.Config()
	}
	expr := settings.NamespaceCondition(c)
	fmt.Fprintf(env.Stdout, "matchConditions:\n  - name: %s\n    expression: '%s'\n", settings.NamespaceConditionName, strings.ReplaceAll(expr, "'", "''"))
	return ExitOK
}
