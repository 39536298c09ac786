package cli_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/cmd/usher/cli"
	"github.com/usherhq/usher/server"
)

// runEnv runs usher with the given environment variables.
func runEnv(t *testing.T, vars map[string]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	env := &cli.Env{Stdout: &out, Stderr: &errb, LookupEnv: lookup}
	code = cli.Run(context.Background(), env, args)
	return out.String(), errb.String(), code
}

// serveReads starts usher serve's configuration loading on path with the
// variables and returns its error and log.
func serveReads(t *testing.T, path string, vars map[string]string) (error, string) {
	t.Helper()
	var logs bytes.Buffer
	_, err := server.New(server.Options{
		ConfigPath:  path,
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
		Getenv:      func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
		AccessAuth:  []string{server.AccessAuthNone},
		WebhookAuth: server.WebhookAuthNone,
	})
	return err, logs.String()
}

const pipelineQueues = `partitions:
  - name: default
    queues:
      - name: root
        queues:
          - name: dev
            submitacl: " dev"
          - name: locked
`

// mountConfigMap lays data out as kubelet mounts a ConfigMap: the files in
// a timestamped directory, ..data a link to it, and one link per key
// through ..data.
func mountConfigMap(t *testing.T, data map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	ts := "..2026_11_23_16_00_00.1234567"
	if err := os.Mkdir(filepath.Join(dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range data {
		if err := os.WriteFile(filepath.Join(dir, ts, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(ts, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The ConfigMap shipped in deploy/ lints as it is.
func TestLintDeployConfigMap(t *testing.T) {
	out, errOut, code := run(t, "lint", "../../../deploy/configmap.yaml")
	if code != cli.ExitOK || strings.Contains(out+errOut, "unknown key") || !strings.Contains(errOut, "deploy/configmap.yaml: valid") {
		t.Fatalf("code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// A mounted ConfigMap directory (kubelet's ..data layout) lints exactly as
// serve reads it: every diagnostic lint prints is what serve logs.
func TestLintMountedConfigMap(t *testing.T) {
	dir := mountConfigMap(t, map[string]string{
		"queues.yaml": pipelineQueues,
		"admissionController.accessControl.externalUsers": "^airflow$,livy",
		"log.level": "info", // another component's key: ignored
	})
	out, errOut, code := run(t, "lint", dir)
	if code != cli.ExitOK {
		t.Fatalf("code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	want := []string{
		filepath.Join(dir, "queues.yaml") + ":8:19: warning: leaf queue root.locked: nobody can submit to it",
		filepath.Join(dir, "admissionController.accessControl.externalUsers") + `: warning: admissionController.accessControl.externalUsers: pattern "livy" is not anchored`,
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(want) {
		t.Fatalf("lint printed:\n%s\nwant %d lines", out, len(want))
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("lint printed:\n%s\nwant a line starting %s", out, w)
		}
	}
	err, logs := serveReads(t, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if !strings.Contains(logs, strings.ReplaceAll(l, `"`, `\"`)) {
			t.Errorf("serve does not report %s; its log:\n%s", l, logs)
		}
	}
}

// A ConfigMap manifest lints with positions in the manifest itself, and
// several paths are linted in one run.
func TestLintManifestAndSeveralPaths(t *testing.T) {
	dir := t.TempDir()
	manifest := filepath.Join(dir, "cm.yaml")
	writeTestFile(t, manifest, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: usher-config\ndata:\n  queues.yaml: |\n"+
		indentLines(strings.Replace(pipelineQueues, `" dev"`, `"a  b c"`, 1), "    ")+
		"  admissionController.enforceQueueACLs: \"perhaps\"\n")
	good := filepath.Join(dir, "good.yaml")
	writeTestFile(t, good, "partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \"*\"\n")
	out, errOut, code := run(t, "lint", good, manifest)
	if code != cli.ExitDenied {
		t.Fatalf("code %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, w := range []string{
		// The extra space of the ACL, at the manifest's own line 13.
		manifest + ":13:31: submitacl \"a  b c\": more than one space",
		manifest + `:15:41: admissionController.enforceQueueACLs: invalid boolean "perhaps"`,
	} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %s:\n%s", w, out)
		}
	}
	if !strings.Contains(errOut, good+": valid") || !strings.Contains(errOut, manifest+": ") {
		t.Errorf("stderr:\n%s", errOut)
	}
	// A path that cannot be read is a usage error, after the others.
	if _, errOut, code := run(t, "lint", good, filepath.Join(dir, "missing.yaml")); code != cli.ExitUsage || !strings.Contains(errOut, good+": valid") {
		t.Fatalf("missing path: code %d\n%s", code, errOut)
	}
}

// check, explain, access and app read a ConfigMap manifest (and a mounted
// directory) as serve does.
func TestCheckConfigMapManifest(t *testing.T) {
	manifest := filepath.Join(t.TempDir(), "cm.yaml")
	writeTestFile(t, manifest, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: usher-config\ndata:\n  queues.yaml: |\n"+
		indentLines(pipelineQueues, "    ")+"  admissionController.accessControl.bypassAuth: \"false\"\n")
	dir := mountConfigMap(t, map[string]string{"queues.yaml": pipelineQueues})
	for _, path := range []string{manifest, dir} {
		out, errOut, code := run(t, "check", "--config", path, "--queue", "root.dev", "--user", "alice", "--groups", "dev")
		if code != cli.ExitOK || !strings.HasPrefix(out, "allowed\n") {
			t.Fatalf("%s: code %d\n%s%s", path, code, out, errOut)
		}
		out, _, code = run(t, "check", "--config", path, "--queue", "root.dev", "--user", "bob")
		if code != cli.ExitDenied || !strings.HasPrefix(out, "denied\n") {
			t.Fatalf("%s: code %d\n%s", path, code, out)
		}
		for _, args := range [][]string{
			{"explain", "--config", path, "--queue", "root.dev", "--user", "alice", "--groups", "dev"},
			{"access", "--config", path, "--user", "alice", "--groups", "dev"},
		} {
			if out, errOut, code := run(t, args...); code != cli.ExitOK {
				t.Fatalf("%v: code %d\n%s%s", args, code, out, errOut)
			}
		}
	}
}

// The ADMISSION_CONTROLLER_* variables are applied by every command as by
// serve: a bad value refuses the configuration everywhere with the same
// message, and a variable's pattern is linted under its name.
func TestEnvironmentAppliedInEveryCommand(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "q.yaml")
	writeTestFile(t, cfg, pipelineQueues+"admissionController:\n  accessControl:\n    externalUsers: \"file-airflow\"\n")
	bad := map[string]string{"ADMISSION_CONTROLLER_BYPASS_AUTH": "perhaps"}
	const badMsg = `environment: ADMISSION_CONTROLLER_BYPASS_AUTH: invalid boolean "perhaps"`
	if _, errOut, code := runEnv(t, bad, "check", "--config", cfg, "--queue", "root.dev", "--user", "alice", "--groups", "dev"); code != cli.ExitUsage || !strings.Contains(errOut, badMsg) {
		t.Fatalf("check: code %d\n%s", code, errOut)
	}
	if out, _, code := runEnv(t, bad, "lint", cfg); code != cli.ExitDenied || !strings.Contains(out, badMsg) {
		t.Fatalf("lint: code %d\n%s", code, out)
	}
	if err, _ := serveReads(t, cfg, bad); err == nil || !strings.Contains(err.Error(), badMsg) {
		t.Fatalf("serve: %v", err)
	}

	over := map[string]string{"ADMISSION_CONTROLLER_EXTERNAL_USERS": "env-airflow"}
	const envWarning = `environment: warning: ADMISSION_CONTROLLER_EXTERNAL_USERS: pattern "env-airflow" is not anchored`
	out, _, code := runEnv(t, over, "lint", cfg)
	if code != cli.ExitOK || !strings.Contains(out, envWarning) || strings.Contains(out, "file-airflow") {
		t.Fatalf("lint: code %d\n%s", code, out)
	}
	err, logs := serveReads(t, cfg, over)
	if err != nil || !strings.Contains(logs, strings.ReplaceAll(envWarning, `"`, `\"`)) || strings.Contains(logs, "file-airflow") {
		t.Fatalf("serve: %v\n%s", err, logs)
	}
	if out, errOut, code := runEnv(t, over, "check", "--config", cfg, "--queue", "root.dev", "--user", "alice", "--groups", "dev"); code != cli.ExitOK {
		t.Fatalf("check: code %d\n%s%s", code, out, errOut)
	}
	// Set and empty is an override too (it trusts nobody), in every
	// command alike: no warning about the file's pattern.
	if out, _, _ := runEnv(t, map[string]string{"ADMISSION_CONTROLLER_EXTERNAL_USERS": ""}, "lint", cfg); strings.Contains(out, "file-airflow") {
		t.Fatalf("lint with an empty override:\n%s", out)
	}
	// --help says the variables apply.
	help, _, _ := run(t, "check", "--help")
	if !strings.Contains(help, "ADMISSION_CONTROLLER_*") {
		t.Fatalf("check --help does not mention the environment:\n%s", help)
	}
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
