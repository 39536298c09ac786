package cli

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// noEnv is an empty environment.
func noEnv(string) (string, bool) { return "", false }

func runArgs(args ...string) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), &Env{Stdout: &out, Stderr: &errb, LookupEnv: noEnv}, args)
	return out.String(), errb.String(), code
}

// allCommands is every command of the tree under root, root included.
func allCommands(root *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{root}
	for _, c := range root.Commands() {
		out = append(out, allCommands(c)...)
	}
	return out
}

// Help, however asked for, is on stdout with exit status 0 and nothing on
// stderr, for every command: usher CMD --help, usher CMD -h, usher help CMD.
func TestHelpOnStdoutForEveryCommand(t *testing.T) {
	root := newRootCommand(&Env{})
	n := 0
	for _, c := range allCommands(root) {
		if c.Hidden || c.Name() == "help" {
			continue
		}
		n++
		path := strings.Fields(c.CommandPath())[1:]
		want := strings.TrimSpace(c.Long)
		if want == "" {
			want = c.Short
		}
		want, _, _ = strings.Cut(want, "\n")
		for _, args := range [][]string{
			append(append([]string{}, path...), "--help"),
			append(append([]string{}, path...), "-h"),
			append([]string{"help"}, path...),
		} {
			out, errs, code := runArgs(args...)
			if code != ExitOK || errs != "" || !strings.Contains(out, want) || !strings.Contains(out, "Usage:\n  "+c.CommandPath()) {
				t.Errorf("usher %s: exit %d, stderr %q, stdout:\n%s\nwant exit 0, help starting %q on stdout", strings.Join(args, " "), code, errs, out, want)
			}
			if c.HasAvailableLocalFlags() && !strings.Contains(out, "  -h, --help ") {
				t.Errorf("usher %s: no flags listed:\n%s", strings.Join(args, " "), out)
			}
		}
	}
	if n < 20 {
		t.Fatalf("only %d commands found", n)
	}
	// usher, usher -h, usher --help and usher help: the root's help.
	for _, args := range [][]string{nil, {"-h"}, {"--help"}, {"help"}} {
		out, errs, code := runArgs(args...)
		if code != ExitOK || errs != "" || !strings.HasPrefix(out, "usher: queue ACLs") || !strings.Contains(out, "  check ") ||
			!strings.Contains(out, "  completion ") {
			t.Errorf("usher %v: exit %d, stderr %q, stdout:\n%s", args, code, errs, out)
		}
	}
}

// usherLine finds an invocation of usher in documentation: after a
// prompt, a "$ " or the start of a code line, not in a sentence.
var usherLine = regexp.MustCompile(`(?:^|[\s$(]|^\s*-\s*)usher ((?:check|explain|place|access|app|lint|test|diff|import|serve|webhook|version|completion)(?:\s.*)?)$`)

// documentedMistake is the first line of usher's answer to a mistyped
// command or flag.
var documentedMistake = regexp.MustCompile(`^usher [a-z ]*: unknown (command|flag|shorthand flag)`)

// invocations returns the usher command lines of file, joined across
// backslash continuations, cut at a pipe, a redirection, a comment or the
// end of the inline code span.
func invocations(t *testing.T, file string) [][]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	pending := ""
	for sc.Scan() {
		line := pending + sc.Text()
		pending = ""
		if strings.HasSuffix(line, "\\") {
			pending = strings.TrimSuffix(line, "\\") + " "
			continue
		}
		// A line the documentation shows as the answer to a mistake:
		// the invocation before it is the mistake.
		if documentedMistake.MatchString(line) && len(out) > 0 {
			out = out[:len(out)-1]
			continue
		}
		m := usherLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cmd := m[1]
		for _, stop := range []string{"`", " |", " >", " #", " &&", ";", " 2>", ")"} {
			if i := strings.Index(cmd, stop); i >= 0 {
				cmd = cmd[:i]
			}
		}
		words, ok := shellWords(cmd)
		if !ok {
			continue
		}
		out = append(out, words)
	}
	return out
}

// shellWords splits s as a shell does, for the simple quoting of the docs;
// ok is false for what it does not understand (an unclosed quote, $VAR).
func shellWords(s string) (words []string, ok bool) {
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '$' || r == '<' || r == '*':
			return nil, false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, false
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, true
}

// Every usher command line written in the documentation, the examples,
// the deployment manifests and the scripts still parses: the command
// exists, and so does every flag, with its value. (A long flag with one
// dash, -config, would not: pflag reads it as -c -o -n -f -i -g.)
func TestDocumentedInvocationsParse(t *testing.T) {
	var files []string
	for _, glob := range []string{"../../../README.md", "../../../docs/*.md", "../../../examples/*.md", "../../../examples/*/*.md",
		"../../../deploy/*.yaml", "../../../deploy/*.md", "../../../hack/*.sh", "../../../Makefile", "../../../Dockerfile", "../../../chart/*/README.md"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	// Flags written one a line in the deployment (args: - serve - --config-map=...).
	deployArgs := regexp.MustCompile(`^\s*-\s+(--?[a-z][a-z0-9-]*(?:=.*)?)\s*$`)
	n, serveArgs := 0, 0
	for _, file := range files {
		var lines [][]string
		if !strings.HasSuffix(file, ".yaml") {
			lines = invocations(t, file)
		} else {
			// Comments in the manifests are prose; their args are the
			// invocation.
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var serve []string
			for _, l := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(strings.TrimSpace(l), "#") {
					continue
				}
				if strings.TrimSpace(l) == "- serve" {
					serve = []string{"serve"}
					continue
				}
				if m := deployArgs.FindStringSubmatch(l); serve != nil && m != nil {
					serve = append(serve, m[1])
				} else if serve != nil && len(serve) > 1 {
					lines, serve = append(lines, serve), nil
					serveArgs++
				}
			}
		}
		for _, words := range lines {
			n++
			root := newRootCommand(&Env{})
			cmd, rest, err := root.Find(words)
			if err != nil || cmd == root {
				t.Errorf("%s: usher %s: no such command: %v", file, strings.Join(words, " "), err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: usher %s: %v", file, strings.Join(words, " "), flagError(cmd, err))
			}
		}
	}
	if serveArgs == 0 {
		t.Fatal("no serve args found in deploy/")
	}
	if n < 50 {
		t.Fatalf("only %d usher command lines found in %d files: the scanner is broken", n, len(files))
	}
	t.Logf("%d usher command lines in %d files parse", n, len(files))
}
