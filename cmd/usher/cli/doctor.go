package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/usherhq/usher/doctor"
)

const doctorHelp = `Check, from outside, what an installation of usher needs, and print each
check with ok, warn or fail and, when not ok, its fix. Each check runs on
its own; a failing one does not stop the others:

  webhook-callers             the Deployment's --webhook-auth (report or none warn)
  webhook-configurations      usher's webhook configurations (named RELEASE, labelled with the
                              release, or calling usher's Service); failurePolicy Ignore warns
  ca-bundles                  each caBundle verifies the certificate usher serves (from the
                              webhook's URL, or the serving Secret)
  certificate-expiry          under 30 days left warns, expired fails
  service                     the Service has ready endpoints (EndpointSlices)
  configuration               the ConfigMaps load as usher lint loads them
  rbac                        usher's service account holds what its features need
  api-server-reaches-webhook  a dry-run pod in --probe-namespace is stamped or answered by usher

Credentials are kubectl's (--kubeconfig, $KUBECONFIG, ~/.kube/config); the
Secret and the SubjectAccessReviews need an administrator's rights. Exit
status: 0 when no check fails, 1 when one fails, 2 when one warns with
--strict, or on bad usage. When usher blocks pod creation:
docs/troubleshooting.md, "Break glass".`

type doctorFlags struct {
	kubeconfig, output string
	in                 doctor.Install
	strict             bool
}

func newDoctorCommand(env *Env) *cobra.Command {
	f := &doctorFlags{}
	cmd, fs := newCommand(groupServe, "doctor [--kubeconfig FILE] [--namespace NS] [--release NAME]",
		"check an installation of usher in a cluster, with a fix for each problem", doctorHelp)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig `FILE` (default: $KUBECONFIG, else ~/.kube/config)")
	fs.StringVar(&f.in.Namespace, "namespace", "usher-system", "usher's `NAMESPACE`")
	fs.StringVar(&f.in.Release, "release", "usher", "the Helm release `NAME` (usher for deploy/): objects are named RELEASE, or RELEASE-usher when it lacks \"usher\"")
	fs.StringVar(&f.in.ProbeNamespace, "probe-namespace", "default", "a `NAMESPACE` usher governs, where a dry-run pod is created")
	fs.StringVarP(&f.output, "output", "o", "text", "output `FORMAT`: text or json (a list of {name, status, detail, fix})")
	fs.BoolVar(&f.strict, "strict", false, "exit 2 when a check warns")
	return setBody(env, cmd, func(ctx context.Context, _ []string) int { return runDoctor(ctx, env, f) })
}

func runDoctor(ctx context.Context, env *Env, f *doctorFlags) int {
	if f.output != "text" && f.output != "json" {
		return env.fail("-o %q: want text or json", f.output)
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	var kube *kubernetes.Clientset
	var meta metadata.Interface
	if err == nil {
		rc.UserAgent, rc.Timeout = "usher-doctor", 20*time.Second
		kube, err = kubernetes.NewForConfig(rc)
	}
	if err == nil {
		meta, err = metadata.NewForConfig(rc)
	}
	if err != nil {
		return env.fail("--kubeconfig: %v", err)
	}
	checks := doctor.Run(ctx, kube, meta, f.in)
	if f.output == "json" {
		outputFlag("json").write(env, checks)
	} else {
		for _, c := range checks {
			fmt.Fprintf(env.Stdout, "%-4s  %-26s  %s\n", c.Status, c.Name, strings.ReplaceAll(c.Detail, "\n", "\n"+strings.Repeat(" ", 34)))
			if c.Fix != "" {
				fmt.Fprintf(env.Stdout, "%34sfix: %s\n", "", c.Fix)
			}
		}
	}
	switch {
	case slices.ContainsFunc(checks, func(c doctor.Check) bool { return c.Status == doctor.Fail }):
		return ExitDenied
	case f.strict && slices.ContainsFunc(checks, func(c doctor.Check) bool { return c.Status == doctor.Warn }):
		return ExitUsage
	}
	return ExitOK
}
