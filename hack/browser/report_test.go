// Package browser tests usher report's page in a real headless Chromium
// (Debian's chromium package, which hack/chromium.sh installs), driven
// through the DevTools protocol. It is a module of its own, so that the
// browser driver is not a dependency of usher.
//
//	go test ./...                                   # in hack/browser
//	USHER_REPORT_SCREENSHOT=$PWD/../../docs/report.png go test ./...
package browser

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/usherhq/usher/cmd/usher/cli"
)

const testdata = "../../report/testdata/"

// chromium is the browser's path: $USHER_CHROMIUM, else what
// hack/chromium.sh finds or installs.
func chromium(t *testing.T) string {
	if p := os.Getenv("USHER_CHROMIUM"); p != "" {
		return p
	}
	out, err := exec.Command("bash", "../chromium.sh").Output()
	if err != nil {
		t.Fatalf("hack/chromium.sh: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// The page of the test configuration loads without a console message or
// an exception, and its DOM shows who may do what, the diff coloured by
// gain and loss, and the placement path.
func TestReportInChromium(t *testing.T) {
	browser := chromium(t)
	t.Chdir(testdata) // the page names the files as given
	var page, errs bytes.Buffer
	args := []string{"report", "--config", "queues.yaml", "--against", "old.yaml", "--user", "alice", "--tag", "namespace=ml"}
	if code := cli.Run(context.Background(), &cli.Env{Stdout: &page, Stderr: &errs, LookupEnv: func(string) (string, bool) { return "", false }}, args); code != 0 {
		t.Fatalf("usher report: exit %d: %s", code, errs.String())
	}
	file := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(file, page.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}

	// Without Chromium's sandbox, which needs user namespaces (or not to be
	// root) that CI containers lack: the page is usher's own.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.WindowSize(1100, 900),
		chromedp.UserDataDir(t.TempDir()), chromedp.NoSandbox)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctx, cancel = chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	ctx, cancel = chromedp.NewContext(ctx)
	defer cancel()

	// Subscribed before the page exists, so that nothing it logs is lost.
	messages := chromedp.Console(ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitVisible(chromedp.ID("tree"))); err != nil {
		t.Fatal(err)
	}
	requests := eval[int](ctx, t, `performance.getEntriesByType("resource").length`)
	// queue -> who may submit, as the page shows it
	tree := eval[map[string]string](ctx, t, `Object.fromEntries([...document.querySelectorAll("#tree tr[data-queue]")].map(r =>
		[r.dataset.queue, [...r.querySelectorAll("td[data-action=submit] > span")].map(s => s.firstChild.textContent.trim()).join(", ")]))`)
	// each line of the diff with its background colour
	diff := eval[[][2]string](ctx, t, `[...document.querySelectorAll("#diff span")].map(s => [s.textContent.trimEnd(), getComputedStyle(s).backgroundColor])`)
	placed := eval[string](ctx, t, `document.getElementById("place").textContent.split("\n")[0]`)
	ml := eval[string](ctx, t, `document.querySelector('#tree tr[data-queue="root.teams.ml"] td[data-action=submit]').textContent`)
	// The test's own last message: whatever the page logged comes before.
	eval[any](ctx, t, `console.log("usher-test-done")`)
	for m, err := range messages {
		if err != nil {
			t.Fatal(err)
		}
		if m.Text == "usher-test-done" {
			break
		}
		t.Errorf("the page logged %s: %q", m.Type, m.Text)
	}
	if requests != 0 {
		t.Errorf("the page fetched %d resources", requests)
	}

	wantTree := map[string]string{
		"root":           "group platform",
		"root.teams":     "user alice, group leads, group platform",
		"root.teams.ml":  "group ml, user alice, group leads, group platform",
		"root.teams.web": "user alice, group leads, group platform",
		"root.sandbox":   "*, group platform",
	}
	if !maps.Equal(tree, wantTree) {
		t.Errorf("tree %q, want %q", tree, wantTree)
	}
	if !strings.Contains(ml, "group ml (alice, bob)") {
		t.Errorf("root.teams.ml submit %q: the members of ml are not shown", ml)
	}
	none, green, red := "rgba(0, 0, 0, 0)", "rgb(218, 251, 225)", "rgb(255, 235, 233)"
	wantDiff := [][2]string{
		{"--- old.yaml", none},
		{"+++ queues.yaml", none},
		{"partition default", none},
		{"  root.teams", none},
		{"-   submit  user bob        and all 2 queues below", red},
		{"  root.teams.ml", none},
		{"+   submit  group ml", green},
		{"  root.sandbox (new queue)", none},
		{"+   submit  everyone (*)", green},
		{"+   admin   group platform", green},
		{"3 rights gained, 1 right lost, starting in 3 queues", none},
	}
	if !slices.Equal(diff, wantDiff) {
		t.Errorf("diff %q, want %q", diff, wantDiff)
	}
	if placed != "root.teams.ml" {
		t.Errorf("placed in %q", placed)
	}

	if out := os.Getenv("USHER_REPORT_SCREENSHOT"); out != "" {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](ctx context.Context, t *testing.T, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}
