package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/cmd/usher/cli"
)

const mlConfig = `partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: ml
            queues:
              - name: training
  - name: gpu
    queues:
      - name: root
        submitacl: "*"
`

// An unknown queue or partition is answered with the closest names and,
// for an unqualified queue marker, where YuniKorn's placement puts it.
func TestUnknownQueueAndPartitionSuggestions(t *testing.T) {
	f := filepath.Join(t.TempDir(), "q.yaml")
	if err := os.WriteFile(f, []byte(mlConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	placed := `usher: did you mean root.ml.training? As a pod's queue marker, YuniKorn's placement (the implicit provided rule) puts "ml.training" in root.ml_dot_training, which does not exist, so such a pod goes to root.default when that exists, or is rejected.`
	tests := []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"check", "--config", f, "--user", "a", "--queue", "ml.training"}, 2,
			"usher: queue \"ml.training\" in partition default: unknown queue\n" + placed + "\n"},
		{[]string{"explain", "--config", f, "--user", "a", "--queue", "root.ml.trainig"}, 2,
			"usher: queue \"root.ml.trainig\" in partition default: unknown queue\nusher: did you mean root.ml.training?\n"},
		{[]string{"check", "--config", f, "--user", "a", "--partition", "gpus", "--queue", "root"}, 2,
			"usher: partition \"gpus\": unknown partition\nusher: did you mean gpu? The partitions are default, gpu\n"},
		{[]string{"access", "--config", f, "--user", "a", "--partition", "defaul"}, 2,
			"usher: partition \"defaul\": unknown partition\nusher: did you mean default? The partitions are default, gpu\n"},
		{[]string{"place", "--config", f, "--user", "a", "--partition", "gpu0"}, 2,
			"usher: partition \"gpu0\": unknown partition\nusher: did you mean gpu? The partitions are default, gpu\n"},
		{[]string{"app", "--config", f, "--user", "a", "--owner", "b", "--action", "move", "--queue", "root.ml.training", "--target-queue", "root.ml.trainin"}, 2,
			"usher: target: queue \"root.ml.trainin\" in partition default: unknown queue\nusher: did you mean root.ml.training?\n"},
		{[]string{"place", "--config", f, "--user", "a", "--queue", "ml.training"}, 1,
			"usher: queue \"ml.training\" in partition default: unknown queue\n" + placed + "\n"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[:1], " ")+" "+tc.args[len(tc.args)-1], func(t *testing.T) {
			out, errs, code := run(t, tc.args...)
			// Each line is prefixed with the command's path.
			tc.err = strings.ReplaceAll(tc.err, "usher: ", "usher "+tc.args[0]+": ")
			if code != tc.code || errs != tc.err {
				t.Errorf("code %d, stderr:\n%s\nwant %d:\n%s\nstdout %s", code, errs, tc.code, tc.err, out)
			}
		})
	}
}

// Leaving out --config answers from the embedded default, and says so in
// one line on stderr; with --config nothing is said.
func TestMissingConfigSaysSo(t *testing.T) {
	const note = ": no --config given: using the embedded default configuration (YuniKorn's default: partition default, where root lets everyone submit and the tag rule places an application in root.NAMESPACE)\n"
	for _, args := range [][]string{
		{"check", "--user", "a", "--queue", "root"},
		{"explain", "--user", "a", "--queue", "root"},
		{"access", "--user", "a"},
		{"place", "--user", "a", "--queue", "root"},
		{"app", "--user", "a", "--owner", "a", "--action", "view"},
	} {
		_, errs, code := run(t, args...)
		// place rejects on the default (root is no leaf): exit 1.
		if errs != "usher "+args[0]+note || (code != 0 && args[0] != "place") {
			t.Errorf("%v: code %d stderr %q", args, code, errs)
		}
		_, errs, _ = run(t, append(args, "--config", yunikornACL)...)
		if strings.Contains(errs, "embedded default") {
			t.Errorf("%v --config: stderr %q", args, errs)
		}
	}
}

// usher lint reads YuniKorn's documentation examples (a ConfigMap's data,
// Helm values, a partition without a single root), with positions.
func TestLintYuniKornForms(t *testing.T) {
	out, errs, code := run(t, "lint", "../../../config/testdata/yunikorn-docs/placement-rules-367.yaml", "../../../config/testdata/yunikorn-docs/service-config-419.yaml")
	want := `../../../config/testdata/yunikorn-docs/placement-rules-367.yaml:6:9: warning: partition default: the top-level queue is production, not root: YuniKorn inserts a root queue above it, so its path is root.production
`
	summary := `../../../config/testdata/yunikorn-docs/placement-rules-367.yaml: valid, 1 warning
../../../config/testdata/yunikorn-docs/service-config-419.yaml: valid, no problems found
`
	if code != 0 || out != want || errs != summary {
		t.Errorf("code %d\nstdout:\n%s\nwant:\n%s\nstderr: %s", code, out, want, errs)
	}
}

// usher serve without --config serves the embedded default and says so
// once, as a warning in its log.
func TestServeWithoutConfigSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int)
	go func() {
		done <- cli.Run(ctx, &cli.Env{Stdout: &out, Stderr: &errb, LookupEnv: noEnv},
			[]string{"serve", "--addr", "127.0.0.1:0", "--access-auth", "none", "--webhook-auth", "none", "--log-format", "text"})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(errb.String(), "no --config given") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-done
	if n := strings.Count(errb.String(), `msg="no --config given: using the embedded default configuration (YuniKorn's default: partition default, where root lets everyone submit and the tag rule places an application in root.NAMESPACE)"`); n != 1 {
		t.Errorf("the note appears %d times in:\n%s", n, errb.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the server's writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
