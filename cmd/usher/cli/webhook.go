package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	arv1 "k8s.io/api/admissionregistration/v1"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/server"
)

const webhookHelp = `Print, as YAML, the MutatingWebhookConfiguration and the
ValidatingWebhookConfiguration that register usher's webhooks for a
configuration: exactly the objects "usher serve --manage-webhooks" applies
(the same code), for GitOps installs that apply them themselves (the chart
with webhooks.manage=false; docs/install.md).

What the configuration decides: the usher-namespaces matchCondition, from
bypassNamespaces and processNamespaces (with the ADMISSION_CONTROLLER_*
overrides), so that the API server never calls usher where it has nothing
to do (docs/security.md, "Blast radius"); with enforceDeleteACLs, DELETE
and pods/eviction on validate.usher.io (docs/delete.md); with
enforceQueueACLs, Kueue's LocalQueues there (docs/placement.md); with
delegatedAdministration, validate-namespace.usher.io and, with enforce,
validate-config.usher.io failing closed but for system:masters and the
trusted setters (docs/delegated-administration.md). The flags say
where usher runs. Re-run it and apply the output whenever the configuration
or the CA changes.

Examples:
  usher webhook --config usher.yaml --ca-bundle-file ca.crt | kubectl apply -f -
  usher webhook --config deploy/configmap.yaml --guard-config-map usher-system/usher-config --ca-bundle-file ca.crt
  usher webhook --url https://10.0.0.5:9443 --ca-bundle-file ca.crt   # usher outside the cluster
`

// webhookFlags defines the flags that say how the webhooks are registered
// (usher webhook and usher serve); the function returned fills in.
func webhookFlags(fs *pflag.FlagSet, in *admission.Install) func() error {
	var optIn, fail, cfgFail string
	var conds []string
	fs.StringVar(&in.Name, "name", "usher", "`NAME` of the ValidatingWebhookConfiguration (and of the mutating one unless --mutating-name)")
	fs.StringVar(&in.MutatingName, "mutating-name", "", "`NAME` of the MutatingWebhookConfiguration; the API server calls mutating webhooks in name order, "+
		"so beside YuniKorn's use one after it, e.g. zz-usher (default: --name)")
	fs.StringVar(&in.Namespace, "namespace", "usher-system", "`NAMESPACE` of usher's Service, never sent to the webhooks, with kube-system")
	fs.StringVar(&in.Service, "service", "usher", "`NAME` of usher's Service")
	fs.Int32Var(&in.Port, "service-port", 9443, "`PORT` of the Service the API server calls the webhooks on")
	fs.StringVar(&in.URL, "url", "", "call the webhooks at `https://HOST:PORT` instead of the Service (usher outside the cluster)")
	fs.StringVar(&in.CABundleFile, "ca-bundle-file", "", "PEM `FILE` of the CA that verifies usher's serving certificate: the webhooks' caBundle, re-read on every apply (default: none)")
	fs.StringVar(&fail, "failure-policy", "Fail", "failurePolicy of the workload webhooks: Fail refuses workloads while no replica answers, Ignore admits them without a trustworthy identity")
	fs.StringVar(&cfgFail, "config-failure-policy", "Ignore", "failurePolicy of validate-config.usher.io (Ignore: a fix of the configuration is accepted while usher is down); Fail whatever this says with delegatedAdministration enforce")
	fs.Int32Var(&in.TimeoutSeconds, "timeout-seconds", 5, "timeoutSeconds of every webhook (1 to 30)")
	fs.StringSliceVar(&in.ExcludedNamespaces, "exclude-namespaces", nil, "further `NAMESPACES` (comma separated or repeated) never sent to the workload webhooks: your CNI's and control plane's")
	fs.StringVar(&optIn, "opt-in-label", "", "serve only namespaces labelled `KEY=VALUE` (default: every namespace not excluded)")
	fs.StringArrayVar(&conds, "match-condition", nil, "further CEL matchCondition `NAME=EXPRESSION` of every workload webhook (repeatable)")
	fs.StringArrayVar(&in.ConfigMaps, "guard-config-map", nil, "ConfigMap `NAMESPACE/NAME` validate-config.usher.io guards (repeatable; default: none, no such webhook)")
	return func() error {
		in.FailurePolicy, in.ConfigFailurePolicy = arv1.FailurePolicyType(fail), arv1.FailurePolicyType(cfgFail)
		for i, p := range []arv1.FailurePolicyType{in.FailurePolicy, in.ConfigFailurePolicy} {
			if p != arv1.Fail && p != arv1.Ignore {
				return fmt.Errorf("%s %q: want Fail or Ignore", []string{"--failure-policy", "--config-failure-policy"}[i], p)
			}
		}
		if in.TimeoutSeconds < 1 || in.TimeoutSeconds > 30 {
			return fmt.Errorf("--timeout-seconds %d: want 1 to 30", in.TimeoutSeconds)
		}
		if optIn != "" {
			k, v, ok := strings.Cut(optIn, "=")
			if !ok || k == "" {
				return fmt.Errorf("--opt-in-label %q: want KEY=VALUE", optIn)
			}
			in.OptIn = map[string]string{k: v}
		}
		for _, c := range conds {
			n, e, ok := strings.Cut(c, "=")
			if !ok || n == "" || e == "" {
				return fmt.Errorf("--match-condition %q: want NAME=EXPRESSION", c)
			}
			in.MatchConditions = append(in.MatchConditions, arv1.MatchCondition{Name: n, Expression: e})
		}
		for _, ref := range in.ConfigMaps {
			if _, err := server.ParseConfigMapRef(ref); err != nil {
				return fmt.Errorf("--guard-config-map %w", err)
			}
		}
		return nil
	}
}

func newWebhookCommand(env *Env) *cobra.Command {
	var path string
	var in admission.Install
	cmd, fs := newCommand(groupConfig, "webhook [--config FILE] [flags]",
		"print the webhook configurations that register usher for a configuration (GitOps)", webhookHelp)
	fs.StringVar(&path, "config", "", configFlagHelp)
	finish := webhookFlags(fs, &in)
	return setBody(env, cmd, func(ctx context.Context, _ []string) int {
		if err := finish(); err != nil {
			return env.fail("%v", err)
		}
		return runWebhook(ctx, env, path, in)
	})
}

func runWebhook(_ context.Context, env *Env, path string, in admission.Install) int {
	cfg, err := loadConfig(env, path)
	if err != nil {
		return env.fail("invalid configuration:\n%v", err)
	}
	if in.CABundleFile != "" {
		if in.CABundle, err = os.ReadFile(in.CABundleFile); err != nil {
			return env.fail("--ca-bundle-file: %v", err)
		}
	}
	m, v := admission.Registration(cfg.Admission.Config(), in)
	return printYAML(env, m, v)
}

// printYAML prints objs as one YAML stream on stdout.
func printYAML(env *Env, objs ...any) int {
	for i, o := range objs {
		if i > 0 {
			fmt.Fprintln(env.Stdout, "---")
		}
		outputFlag("yaml").write(env, o)
	}
	return ExitOK
}
