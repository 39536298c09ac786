package cli_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/usherhq/usher/cmd/usher/cli"
)

// A mistyped command or flag is a usage error (exit 2, nothing on stdout)
// that names the command, offers the nearest commands or flags, and says
// where the help is.
func TestSuggestions(t *testing.T) {
	tests := []struct {
		args []string
		want []string // in stderr, in this order
	}{
		{[]string{"chek"}, []string{`usher: unknown command "chek" for "usher"`, "Did you mean this?\n\tcheck\n", `Run "usher --help" for usage.`}},
		{[]string{"expalin", "--user", "a"}, []string{`unknown command "expalin"`, "\texplain\n"}},
		{[]string{"imprt"}, []string{"\timport\n"}},
		{[]string{"check", "--usr", "alice"}, []string{"usher check: unknown flag: --usr", "Did you mean this?\n\t--user\n", `Run "usher check --help" for usage.`}},
		{[]string{"check", "--user", "a", "--qeue", "root.a"}, []string{"unknown flag: --qeue", "\t--queue\n"}},
		{[]string{"explain", "--confg", "q.yaml"}, []string{"usher explain: unknown flag: --confg", "\t--config\n"}},
		{[]string{"place", "--tags", "a=b"}, []string{"unknown flag: --tags", "\t--tag\n"}},
		{[]string{"access", "--ouptut", "json"}, []string{"unknown flag: --ouptut", "\t--output\n"}},
		{[]string{"serve", "--adr", ":8443"}, []string{"usher serve: unknown flag: --adr", "\t--addr\n"}},
		{[]string{"serve", "--tls-crt", "c.pem"}, []string{"\t--tls-cert\n"}},
		{[]string{"serve", "--access"}, []string{"unknown flag: --access", "\t--access-auth\n\t--access-auth-cache-ttl\n\t--access-privileged-groups\n"}},
		{[]string{"test", "--junit"}, []string{"usher test: unknown flag: --junit"}},
		{[]string{"import", "yarn", "--fair-sheduler", "f.xml"}, []string{"usher import yarn: unknown flag: --fair-sheduler", "\t--fair-scheduler\n"}},
		{[]string{"import", "sprak"}, []string{`usher import: unknown command "sprak" for "usher import": want spark or yarn`, "\tspark\n"}},
		{[]string{"completion", "tcsh"}, []string{`usher completion: unknown command "tcsh" for "usher completion": want bash, fish, powershell or zsh`}},
		{[]string{"help", "chek"}, []string{`usher help: unknown command "chek" for "usher"`, "\tcheck\n"}},
		{[]string{"help", "import", "yran"}, []string{`usher help: unknown command "yran" for "usher import": want spark or yarn`, "\tyarn\n"}},
		// A long flag with one dash, as the standard flag package took
		// it: pflag reads -config as -c -o -n...; the answer names --config.
		{[]string{"check", "-config", "q.yaml"}, []string{"usher check: unknown shorthand flag: 'c' in -config", "\t--config\n"}},
		{[]string{"check", "-user=a"}, []string{"\t--user\n"}},
		{[]string{"-version"}, []string{"usher: unknown shorthand flag: 'v' in -version", "\t--version\n"}},
		{[]string{"diff", "-subjects", "s.txt"}, []string{"\t--subjects\n"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errs, code := run(t, tt.args...)
			if code != cli.ExitUsage || out != "" {
				t.Fatalf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			rest := errs
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("stderr:\n%s\nwant %q (after the previous)", errs, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
	// No suggestion when nothing is near.
	if _, errs, _ := run(t, "check", "--zzzzzzzz"); strings.Contains(errs, "Did you mean") {
		t.Errorf("--zzzzzzzz: %q", errs)
	}
}

// The exit status of every kind of outcome, command by command: 0 ok or
// allowed, 1 denied (lint errors, failed policy tests, a diff with
// changes), 2 bad usage, a bad configuration or a failure to decide.
func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	failing := filepath.Join(dir, "wrong_test.yaml")
	if err := os.WriteFile(failing, []byte("config: "+mustAbs(t, yunikornACL)+"\ncases:\n  - name: sue may not\n    user: sue\n    queue: root.test\n    expect: denied\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	malformed := filepath.Join(dir, "bad_test.yaml")
	if err := os.WriteFile(malformed, []byte("config: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		code int
		args []string
	}{
		{0, nil},
		{0, []string{"help"}},
		{0, []string{"help", "check"}},
		{0, []string{"-h"}},
		{0, []string{"check", "--help"}},
		{0, []string{"version"}},
		{0, []string{"--version"}},
		{0, []string{"completion", "bash"}},
		{0, []string{"check", "--config", yunikornACL, "--queue", "root.test", "--user", "sue"}},
		{1, []string{"check", "--config", yunikornACL, "--queue", "root.product", "--user", "sue"}},
		{1, []string{"check", "--config", yunikornACL, "--queue", "root.product", "--user", "sue", "-o", "json"}},
		{2, []string{"check", "--config", yunikornACL, "--queue", "root.nope", "--user", "sue"}},
		{2, []string{"check", "--config", "../../../examples/broken.yaml", "--user", "sue"}},
		{2, []string{"check", "--queue", "root.test"}},
		{2, []string{"check", "--user"}},
		{2, []string{"check", "--user", "a", "stray"}},
		{2, []string{"check", "--bogus"}},
		{2, []string{"bogus"}},
		{0, []string{"explain", "--config", yunikornACL, "--queue", "root.test", "--user", "sue"}},
		{1, []string{"explain", "--config", yunikornACL, "--queue", "root.product", "--user", "sue"}},
		{0, []string{"access", "--config", yunikornACL, "--user", "sue"}},
		{2, []string{"access"}},
		{0, []string{"lint", yunikornACL}},
		{1, []string{"lint", "../../../examples/broken.yaml"}},
		{2, []string{"lint"}},
		{2, []string{"lint", filepath.Join(dir, "missing.yaml")}},
		{0, []string{"test", "../../../examples/yunikorn-acl_test.yaml"}},
		{1, []string{"test", failing}},
		{2, []string{"test", malformed}},
		{2, []string{"test", "-o", "xml", "../../../examples/yunikorn-acl_test.yaml"}},
		{0, []string{"diff", yunikornACL, yunikornACL}},
		{1, []string{"diff", teams, teamsNext}},
		{2, []string{"diff", teams}},
		{0, []string{"webhook", "--config", yunikornACL}},
		{0, []string{"import"}},
		{0, []string{"completion"}},
		{2, []string{"completion", "tcsh"}},
		{2, []string{"help", "bogus"}},
		{2, []string{"import", "mesos"}},
		{2, []string{"serve", "--log-format", "xml"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, errs, code := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, out, errs)
			}
			// A usage error or a failure says why on stderr.
			if code == cli.ExitUsage && errs == "" {
				t.Fatalf("exit 2 with stderr %q", errs)
			}
		})
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A port in use is a startup error like a bad flag: exit 2 and a message
// naming the address, not a log line and exit 1.
func TestServePortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := make(chan struct{})
	var out, errs string
	var code int
	go func() {
		defer close(done)
		out, errs, code = runCtx(ctx, "serve", "--addr", addr, "--access-auth", "none", "--webhook-auth", "none", "--log-format", "text", "--config", yunikornACL)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cancel()
		<-done
		t.Fatalf("usher serve on a port in use kept running: stderr:\n%s", errs)
	}
	want := "usher serve: cannot listen on " + addr + " (--addr): "
	if code != cli.ExitUsage || !strings.Contains(errs, want) || !strings.Contains(errs, "address already in use") || out != "" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q", code, out, errs, want+"… address already in use")
	}
}

// inheritedSocket listens on 127.0.0.1:0, as a parent process that keeps
// the port would, and returns the address and a descriptor of the socket
// for usher serve --addr fd:N, which takes the descriptor over.
func inheritedSocket(t *testing.T) (addr, flag string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	return ln.Addr().String(), fmt.Sprintf("fd:%d", fd)
}

// usher serve --addr fd:N serves on the listening socket it inherits as
// descriptor N, at the address its parent bound; a descriptor that is not
// a socket, or not a number from 3 up, is a startup error naming --addr.
func TestServeInheritedSocket(t *testing.T) {
	addr, flag := inheritedSocket(t)
	caPath := filepath.Join(t.TempDir(), "ca.pem")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Run(ctx, &cli.Env{Stdout: &out, Stderr: &errb, LookupEnv: noEnv},
			[]string{"serve", "--config", yunikornACL, "--addr", flag, "--access-auth", "none", "--webhook-auth", "none", "--ca-out", caPath})
	}()
	serving := `"msg":"usher serving","addr":"` + addr + `"`
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(errb.String(), serving); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("usher serve --addr %s did not log %s:\n%s", flag, serving, errb.String())
		}
	}
	pem, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok\n" {
		t.Fatalf("GET /healthz on the inherited socket: %d %q", resp.StatusCode, body)
	}
	cancel()
	if code := <-done; code != cli.ExitOK {
		t.Fatalf("usher serve exited %d:\n%s", code, errb.String())
	}

	file, err := os.Create(filepath.Join(t.TempDir(), "not-a-socket"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	fd, err := syscall.Dup(int(file.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ addr, want string }{
		{"fd:2", "want a descriptor from 3 up"},
		{"fd:x", `parsing "x": invalid syntax`},
		{fmt.Sprintf("fd:%d", fd), "socket operation on non-socket"},
	} {
		out, errs, code := runCtx(context.Background(), "serve", "--addr", c.addr, "--access-auth", "none", "--webhook-auth", "none", "--log-format", "text", "--config", yunikornACL)
		want := "usher serve: cannot listen on " + c.addr + " (--addr): "
		if code != cli.ExitUsage || out != "" || !strings.Contains(errs, want) || !strings.Contains(errs, c.want) {
			t.Errorf("--addr %s: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q", c.addr, code, out, errs, want+"… "+c.want)
		}
	}
}

// usher completion bash prints a script that bash loads and that registers
// a completion for usher; zsh's is checked by zsh where it is installed.
func TestCompletionScripts(t *testing.T) {
	dir := t.TempDir()
	script, errs, code := run(t, "completion", "bash")
	if code != 0 || errs != "" || !strings.Contains(script, "__start_usher") {
		t.Fatalf("completion bash: exit %d, stderr %q", code, errs)
	}
	file := filepath.Join(dir, "usher.bash")
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if out, err := exec.Command(bash, "-n", file).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	out, err := exec.Command(bash, "-c", "source "+file+" && complete -p usher").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "complete") || !strings.HasSuffix(strings.TrimSpace(string(out)), " usher") {
		t.Fatalf("source, then complete -p usher: %v\n%s", err, out)
	}

	zshScript, errs, code := run(t, "completion", "zsh")
	if code != 0 || errs != "" || !strings.HasPrefix(zshScript, "#compdef usher") || !strings.Contains(zshScript, "compdef _usher usher") {
		t.Fatalf("completion zsh: exit %d, stderr %q, script starts %.40q", code, errs, zshScript)
	}
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		t.Log("no zsh: its script's shape is checked, not its syntax")
		return
	}
	zfile := filepath.Join(dir, "_usher")
	if err := os.WriteFile(zfile, []byte(zshScript), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(zsh, "-n", zfile).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
	out, err = exec.Command(zsh, "-f", "-c", "autoload -U compinit && compinit -u -D && source "+zfile+" && print -r -- ${_comps[usher]}").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "_usher" {
		t.Fatalf("zsh: source, then $_comps[usher]: %v\n%s", err, out)
	}
}

// What the shell scripts ask usher (the hidden __complete command): the
// commands, the flags of a command, and for --queue the queue paths of
// the configuration given with --config.
func TestCompletionAnswers(t *testing.T) {
	tests := []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"__complete", "ch"}, []string{"check\t"}, []string{"explain"}},
		{[]string{"__complete", "help", "ex"}, []string{"explain\t"}, []string{"check\t"}},
		{[]string{"__complete", "help", "import", ""}, []string{"spark\t", "yarn\t"}, nil},
		{[]string{"__complete", "check", "--con"}, []string{"--config\t"}, nil},
		{[]string{"__complete", "serve", "--access-"}, []string{"--access-auth\t", "--access-privileged-groups\t"}, nil},
		{[]string{"__complete", "check", "--config", yunikornACL, "--queue", "root."}, []string{"root.test\n", "root.product\n", ":4\n"}, []string{"--"}},
		{[]string{"__complete", "explain", "--config", yunikornACL, "--queue", "root.p"}, []string{"root.product\n"}, []string{"root.test"}},
		{[]string{"__complete", "app", "--config", yunikornACL, "--target-queue", ""}, []string{"root.test\n"}, nil},
		{[]string{"__complete", "place", "--config", yunikornACL, "--queue", ""}, []string{"root.test\n"}, nil},
		// No --config: nothing to offer, and no file names either.
		{[]string{"__complete", "check", "--queue", ""}, []string{":4\n"}, []string{"root"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, _, code := run(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("want %q in:\n%s", w, out)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(out, w) {
					t.Errorf("want no %q in:\n%s", w, out)
				}
			}
		})
	}
}

func runCtx(ctx context.Context, args ...string) (stdout, stderr string, code int) {
	var out, errb strings.Builder
	code = cli.Run(ctx, &cli.Env{Stdout: &out, Stderr: &errb, LookupEnv: noEnv}, args)
	return out.String(), errb.String(), code
}

// The bash completion works end to end: bash sources the script of a
// built usher, and pressing Tab after --queue offers the queue paths of
// the --config given, after "usher ch" the command check.
func TestBashCompletionEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds usher")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "usher")
	build := exec.Command("go", "build", "-o", bin, "./cmd/usher")
	build.Dir = "../../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := mustAbs(t, yunikornACL)
	complete := func(line string) []string {
		t.Helper()
		// What bash does on Tab. The script needs bash-completion's
		// _get_comp_words_by_ref; where the package is not installed, a
		// stand-in for these simple lines (no = or : to split on).
		script := `[ -r /usr/share/bash-completion/bash_completion ] && source /usr/share/bash-completion/bash_completion
if ! declare -F _get_comp_words_by_ref >/dev/null; then
  _get_comp_words_by_ref() { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD; }
fi
# compopt only works inside a completion bash itself started.
compopt() { :; }
source <("$USHER" completion bash) || exit 1
read -r -a COMP_WORDS <<< "$LINE"
[[ "$LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="$LINE"
COMP_POINT=${#LINE}
__start_usher usher
printf '%s\n' "${COMPREPLY[@]}"`
		cmd := exec.Command(bash, "--norc", "--noprofile", "-c", script)
		cmd.Env = append(os.Environ(), "USHER="+bin, "LINE="+line, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", line, err, out)
		}
		return strings.Fields(string(out))
	}
	if got := complete("usher ch"); strings.Join(got, " ") != "check" {
		t.Errorf("usher ch<Tab>: %q", got)
	}
	if got := complete("usher check --config " + cfg + " --queue root.p"); strings.Join(got, " ") != "root.product" {
		t.Errorf("--queue root.p<Tab>: %q", got)
	}
	if got := complete("usher check --config " + cfg + " --qu"); strings.Join(got, " ") != "--queue" {
		t.Errorf("--qu<Tab>: %q", got)
	}
}
