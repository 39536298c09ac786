//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The users of the cluster's token file. The API server reports each with
// the groups in UserGroups plus system:authenticated.
const (
	// Admin is in system:masters: it may do anything, impersonation included.
	Admin = "admin"
	// Alice is a tenant in group "dev".
	Alice = "alice"
	// Bob is a tenant in group "ops".
	Bob = "bob"
	// Carol is a tenant in group "spark-submitters", for externalGroups tests.
	Carol = "carol"
	// Ext is a tenant in no group of its own, for externalUsers tests.
	Ext = "ext"
)

// Tenants are the users that NewNamespace lets manage workloads.
var Tenants = []string{Alice, Bob, Carol, Ext}

// UserGroups are the groups the token file gives each user (without
// system:authenticated, which the API server adds).
var UserGroups = map[string][]string{
	Admin: {"system:masters"},
	Alice: {"dev"},
	Bob:   {"ops"},
	Carol: {"spark-submitters"},
	Ext:   nil,
}

// TenantRole is the ClusterRole that NewNamespace binds to the Tenants in a
// namespace: every verb on the workload kinds usher admits, nothing else.
const TenantRole = "usher-e2e-tenant"

// EnvFileVar names the environment variable that points the tests at a
// cluster already started by `hack/e2e-cluster.sh up` (its state dir's env
// file). When it is empty, Start starts a cluster of its own.
const EnvFileVar = "USHER_E2E_ENV"

// Cluster is a control plane started by hack/e2e-cluster.sh, as described by
// the env file in its state directory.
type Cluster struct {
	// StateDir holds the cluster's certificates, kubeconfigs, etcd data,
	// logs (StateDir/logs) and pids.
	StateDir string
	// Server is the API server's URL, https://127.0.0.1:PORT.
	Server string
	// CAFile is the PEM certificate of the CA that signed the API server's
	// serving certificate; CAKeyFile is its key, for signing webhook
	// serving certificates (see ServingCert).
	CAFile, CAKeyFile string
	// WebhookClientCAFile is the CA of the client certificate the API
	// server presents to every webhook (WebhookClientCertFile and
	// WebhookClientKeyFile, common name kube-apiserver), through the
	// AdmissionConfiguration hack/e2e-cluster.sh gives it.
	WebhookClientCAFile, WebhookClientCertFile, WebhookClientKeyFile string
	// Kubectl is the path of the kubectl binary built with the cluster.
	Kubectl string
	// ControllerServiceAccounts is true when each controller acts as its own
	// service account (system:serviceaccount:kube-system:NAME-controller),
	// false when all act as system:kube-controller-manager.
	ControllerServiceAccounts bool

	kubeconfigs map[string]string
}

// Load reads the env file written by `hack/e2e-cluster.sh up`
// (STATE/env: lines of the form export NAME='value').
func Load(envFile string) (*Cluster, error) {
	data, err := os.ReadFile(envFile)
	if err != nil {
		return nil, fmt.Errorf("e2e: reading cluster env file: %w", err)
	}
	vars, err := parseEnv(data)
	if err != nil {
		return nil, fmt.Errorf("e2e: %s: %w", envFile, err)
	}
	c := &Cluster{
		StateDir:                  vars["USHER_E2E_STATE"],
		Server:                    vars["USHER_E2E_SERVER"],
		CAFile:                    vars["USHER_E2E_CA_FILE"],
		CAKeyFile:                 vars["USHER_E2E_CA_KEY_FILE"],
		WebhookClientCAFile:       vars["USHER_E2E_WEBHOOK_CLIENT_CA_FILE"],
		WebhookClientCertFile:     vars["USHER_E2E_WEBHOOK_CLIENT_CERT_FILE"],
		WebhookClientKeyFile:      vars["USHER_E2E_WEBHOOK_CLIENT_KEY_FILE"],
		Kubectl:                   vars["USHER_E2E_KUBECTL"],
		ControllerServiceAccounts: vars["USHER_E2E_KCM_SA_CREDENTIALS"] != "false",
		kubeconfigs:               map[string]string{},
	}
	for _, u := range append([]string{Admin}, Tenants...) {
		name := "USHER_E2E_KUBECONFIG_" + strings.ToUpper(u)
		if vars[name] == "" {
			return nil, fmt.Errorf("e2e: %s: no %s", envFile, name)
		}
		c.kubeconfigs[u] = vars[name]
	}
	for name, v := range map[string]string{"USHER_E2E_STATE": c.StateDir, "USHER_E2E_SERVER": c.Server, "USHER_E2E_CA_FILE": c.CAFile,
		"USHER_E2E_WEBHOOK_CLIENT_CA_FILE": c.WebhookClientCAFile} {
		if v == "" {
			return nil, fmt.Errorf("e2e: %s: no %s", envFile, name)
		}
	}
	return c, nil
}

// parseEnv reads lines of the form export NAME='value', where a single quote
// inside the value is written the shell's way: quote, backslash, quote, quote.
func parseEnv(data []byte) (map[string]string, error) {
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		if !ok {
			return nil, fmt.Errorf("line %d: %q is not NAME=value", n, line)
		}
		if len(value) >= 2 && value[0] == '\'' && value[len(value)-1] == '\'' {
			value = strings.ReplaceAll(value[1:len(value)-1], `'\''`, `'`)
		}
		vars[name] = value
	}
	return vars, sc.Err()
}

// RepoRoot finds the repository root (the directory holding
// hack/e2e-cluster.sh) from the working directory upwards.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "e2e-cluster.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("e2e: no hack/e2e-cluster.sh in the working directory or above it")
		}
		dir = parent
	}
}

// Start returns the cluster to test against and a function that stops it.
//
// When USHER_E2E_ENV names an env file (hack/e2e.sh sets it), Start uses
// that cluster and stop does nothing: whoever started it stops it. Otherwise
// Start runs `hack/e2e-cluster.sh up` with a state directory of its own
// (under os.TempDir) and this process as the owner, so the cluster goes down
// when stop is called or, failing that, when this process exits in any way.
// stop(true) also removes the state directory; stop(false) keeps it and its
// logs for a post-mortem.
func Start(ctx context.Context) (c *Cluster, stop func(removeState bool) error, err error) {
	if f := os.Getenv(EnvFileVar); f != "" {
		c, err := Load(f)
		return c, func(bool) error { return nil }, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, nil, err
	}
	state, err := os.MkdirTemp("", "usher-e2e-")
	if err != nil {
		return nil, nil, err
	}
	script := filepath.Join(root, "hack", "e2e-cluster.sh")
	run := func(ctx context.Context, args ...string) error {
		cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "USHER_E2E_STATE="+state, fmt.Sprintf("USHER_E2E_OWNER_PID=%d", os.Getpid()))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("e2e: hack/e2e-cluster.sh %s (state %s): %w", strings.Join(args, " "), state, err)
		}
		return nil
	}
	stop = func(removeState bool) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := run(ctx, "down"); err != nil {
			return err
		}
		if removeState {
			_ = os.Remove(state + ".lock")
			return os.RemoveAll(state)
		}
		return nil
	}
	if err := run(ctx, "up"); err != nil {
		return nil, stop, err
	}
	c, err = Load(filepath.Join(state, "env"))
	return c, stop, err
}

// Users lists the users the cluster has kubeconfigs for.
func (c *Cluster) Users() []string {
	return append([]string{Admin}, Tenants...)
}

// Kubeconfig returns the path of user's kubeconfig file.
func (c *Cluster) Kubeconfig(user string) (string, error) {
	f, ok := c.kubeconfigs[user]
	if !ok {
		return "", fmt.Errorf("e2e: no kubeconfig for user %q (have %v)", user, c.Users())
	}
	return f, nil
}

// RESTConfig returns a client configuration that authenticates as user.
func (c *Cluster) RESTConfig(user string) (*rest.Config, error) {
	f, err := c.Kubeconfig(user)
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", f)
	if err != nil {
		return nil, fmt.Errorf("e2e: kubeconfig of %q: %w", user, err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	cfg.UserAgent = "usher-e2e/" + user
	return cfg, nil
}

// Client returns a clientset that authenticates as user.
func (c *Cluster) Client(user string) (kubernetes.Interface, error) {
	cfg, err := c.RESTConfig(user)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// ClientAs returns a clientset that authenticates as user and asks to act as
// impersonate (with groups, when given).
func (c *Cluster) ClientAs(user, impersonate string, groups ...string) (kubernetes.Interface, error) {
	cfg, err := c.RESTConfig(user)
	if err != nil {
		return nil, err
	}
	cfg.Impersonate = rest.ImpersonationConfig{UserName: impersonate, Groups: groups}
	return kubernetes.NewForConfig(cfg)
}

// NewNamespace creates a namespace named like prefix-xxxxx (labelled with
// labels), binds TenantRole in it to every tenant, waits until its default
// service account exists (pods cannot be created before), and returns its
// name. The caller deletes it, or ignores it: the cluster is thrown away.
func (c *Cluster) NewNamespace(ctx context.Context, prefix string, labels map[string]string) (string, error) {
	admin, err := c.Client(Admin)
	if err != nil {
		return "", err
	}
	ns, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-", Labels: labels},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("e2e: creating namespace %s-*: %w", prefix, err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: TenantRole, Namespace: ns.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: TenantRole},
	}
	for _, u := range Tenants {
		rb.Subjects = append(rb.Subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: u})
	}
	if _, err := admin.RbacV1().RoleBindings(ns.Name).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("e2e: binding %s in %s: %w", TenantRole, ns.Name, err)
	}
	err = Eventually(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		_, err := admin.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return "", fmt.Errorf("e2e: waiting for the default service account of %s (is kube-controller-manager running? see %s): %w",
			ns.Name, filepath.Join(c.StateDir, "logs", "kube-controller-manager.log"), err)
	}
	return ns.Name, nil
}

// ControllerUser is the user the API server sees when a controller writes
// an object: the controller's own service account
// system:serviceaccount:kube-system:SA, or the shared user
// system:kube-controller-manager when the cluster runs without per-controller
// credentials. sa names the controller's service account:
// deployment-controller, replicaset-controller, replication-controller,
// statefulset-controller, daemon-set-controller, job-controller or
// cronjob-controller.
func (c *Cluster) ControllerUser(sa string) string {
	if !c.ControllerServiceAccounts {
		return "system:kube-controller-manager"
	}
	return "system:serviceaccount:kube-system:" + sa
}

// RunKubectl runs the cluster's kubectl as user with args and returns what
// it printed on stdout and stderr; err is non-nil when it exited non-zero.
func (c *Cluster) RunKubectl(ctx context.Context, user string, stdin []byte, args ...string) (stdout, stderr string, err error) {
	f, err := c.Kubeconfig(user)
	if err != nil {
		return "", "", err
	}
	if c.Kubectl == "" {
		return "", "", errors.New("e2e: the cluster env file names no kubectl")
	}
	cmd := exec.CommandContext(ctx, c.Kubectl, append([]string{"--kubeconfig", f}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+f)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err = cmd.Run()
	return out.String(), errb.String(), err
}

// Eventually calls cond every 200ms until it returns true, returns an error,
// or timeout passes (then the error says so, with cond's last error).
func Eventually(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) (bool, error)) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, cond)
}
