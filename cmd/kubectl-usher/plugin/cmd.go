// Package plugin is the kubectl plugin kubectl-usher: a tenant asks
// usher, with the identity in its own kubeconfig, what it may do and why.
//
// The rules it keeps:
//
//   - Who the caller is comes from the API server (SelfSubjectReview) and
//     from usher's own authentication of the caller's credential
//     (TokenReview or a client certificate); the plugin never asserts an
//     identity that usher takes on trust.
//   - Asking about someone else (--as, --as-group) is said in the body of
//     the question, and usher answers only callers allowed to create
//     accessreviews in API group usher.io (or in its privileged groups).
//     Only the server-side dry run of why impersonates, because it is a
//     request to the API server, which checks the impersonate permission.
//   - can-i exits like kubectl auth can-i: 0 yes, 1 no; every error is 2.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/usherhq/usher/decision"
)

// Streams are the plugin's standard streams.
type Streams struct {
	In          io.Reader
	Out, ErrOut io.Writer
}

// Environment variables that give the defaults of the --usher-* flags.
const (
	EnvServer     = "KUBECTL_USHER_SERVER"
	EnvCA         = "KUBECTL_USHER_CERTIFICATE_AUTHORITY"
	EnvServerName = "KUBECTL_USHER_TLS_SERVER_NAME"
)

// options are the flags every command shares; kubeconfig and overrides
// are kubectl's own, read the way kubectl reads them (client-go's clientcmd).
type options struct {
	streams         Streams
	kubeconfig      string
	overrides       clientcmd.ConfigOverrides
	cc              clientcmd.ClientConfig
	usherServer     string
	usherCA         string
	usherServerName string
	partition       string
	output          string
}

// errNo is returned by a command whose answer is no: exit 1, no message.
var errNo = errors.New("no")

// verdict is err, or errNo for an answer that is no.
func verdict(err error, yes bool) error {
	if err == nil && !yes {
		return errNo
	}
	return err
}

// Main runs the plugin with args (without the program name), the --usher-*
// defaults read with getenv, and returns the exit code.
func Main(ctx context.Context, args []string, streams Streams, getenv func(string) string) int {
	cmd := newRoot(streams, getenv)
	cmd.SetArgs(args)
	switch err := cmd.ExecuteContext(ctx); {
	case err == nil:
		return 0
	case errors.Is(err, errNo):
		return 1
	default:
		fmt.Fprintln(streams.ErrOut, "error:", err)
		return 2
	}
}

func newRoot(streams Streams, getenv func(string) string) *cobra.Command {
	o := &options{streams: streams}
	root := &cobra.Command{
		Use:         "kubectl-usher",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl usher"},
		Short:       "Ask usher what you may do on the batch queues, and why",
		Long: `kubectl usher asks usher's decision API with your own kubeconfig
credentials: who you are and which groups usher decides with (whoami),
whether you may submit to or administer a queue (can-i), what admission
would decide for a manifest (why), and every queue with your rights
(queues).

usher is asked through the API server (the aggregated API access.usher.io,
which usher serve --aggregated-api serves), with no flags and from any
kubeconfig; --usher-server asks usher at its own address instead. See
docs/kubectl-usher.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Example: `  kubectl usher whoami
  kubectl usher can-i submit root.ml
  kubectl usher can-i submit root.ops --as bob --as-group ops
  kubectl usher why -f job.yaml
  kubectl usher queues -o yaml`,
	}
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetIn(streams.In)
	root.CompletionOptions.HiddenDefaultCmd = true
	pf := root.PersistentFlags()
	pf.StringVar(&o.kubeconfig, clientcmd.RecommendedConfigPathFlag, "", "path to the kubeconfig file to use")
	clientcmd.BindOverrideFlags(&o.overrides, pf, clientcmd.RecommendedConfigOverrideFlags(""))
	pf.StringVar(&o.usherServer, "usher-server", getenv(EnvServer), "usher's address, https://HOST[:PORT], to ask usher directly (default: through the API server, access.usher.io; $"+EnvServer+")")
	pf.StringVar(&o.usherCA, "usher-certificate-authority", getenv(EnvCA), "PEM file of the CA that signed usher's serving certificate (default: the system's roots; $"+EnvCA+")")
	pf.StringVar(&o.usherServerName, "usher-tls-server-name", getenv(EnvServerName), "name to check usher's serving certificate against (default: the host of --usher-server; $"+EnvServerName+")")
	pf.StringVar(&o.partition, "partition", "", "partition to ask about (default: usher's default partition)")
	root.AddCommand(newWhoami(o), newCanI(o), newWhy(o), newQueues(o))
	return root
}

// addOutput adds -o text|json|yaml, checked before the command runs.
func (o *options) addOutput(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text, json or yaml")
	cmd.PreRunE = func(*cobra.Command, []string) error {
		switch o.output {
		case "text", "json", "yaml":
			return nil
		}
		return fmt.Errorf("--output %q: want text, json or yaml", o.output)
	}
}

// clientConfig is the kubeconfig as the flags select it, loaded once.
func (o *options) clientConfig() clientcmd.ClientConfig {
	if o.cc == nil {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = o.kubeconfig
		o.cc = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &o.overrides)
	}
	return o.cc
}

func (o *options) impersonating() bool {
	return o.overrides.AuthInfo.Impersonate != "" || len(o.overrides.AuthInfo.ImpersonateGroups) > 0
}

// restConfig is the caller's API server configuration; impersonate keeps
// --as and --as-group (for requests the API server checks them on).
func (o *options) restConfig(impersonate bool) (*rest.Config, error) {
	cfg, err := o.clientConfig().ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	if !impersonate {
		cfg.Impersonate = rest.ImpersonationConfig{}
	}
	cfg.UserAgent = "kubectl-usher"
	return cfg, nil
}

// subject is the identity a question is about: the caller as the API server
// sees it, or --as and --as-group, with system:authenticated added as the
// API server adds it to an impersonated user.
func (o *options) subject(ctx context.Context) (who Identity, self bool, err error) {
	if as := o.overrides.AuthInfo; o.impersonating() {
		if as.Impersonate == "" {
			return Identity{}, false, errors.New("--as-group needs --as USER")
		}
		groups := append([]string{}, as.ImpersonateGroups...)
		if as.Impersonate != user.Anonymous && !slices.Contains(groups, user.AllAuthenticated) {
			groups = append(groups, user.AllAuthenticated)
		}
		return Identity{User: as.Impersonate, Groups: groups}, false, nil
	}
	cfg, err := o.restConfig(false)
	if err != nil {
		return Identity{}, false, err
	}
	who, err = selfSubjectReview(ctx, cfg)
	return who, true, err
}

// ask sends req to usher about the subject, and returns the answer and the subject.
func (o *options) ask(ctx context.Context, req decision.AccessRequest) (ans *decision.Output, who Identity, self bool, err error) {
	if who, self, err = o.subject(ctx); err != nil {
		return nil, who, self, err
	}
	uc, err := o.usherClient()
	if err != nil {
		return nil, who, self, err
	}
	req.User, req.Groups = who.User, who.Groups
	if req.Place {
		// The namespace tag, as YuniKorn's shim passes it.
		ns, _, err := o.clientConfig().Namespace()
		if err != nil {
			return nil, who, self, err
		}
		req.Tags = map[string]string{"namespace": ns}
	}
	ans, err = uc.access(ctx, req)
	return ans, who, self, err
}

// orEmpty is s, or an empty list for nil: JSON [] rather than null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func joinOr(list []string, none string) string {
	if len(list) == 0 {
		return none
	}
	return strings.Join(list, ", ")
}
