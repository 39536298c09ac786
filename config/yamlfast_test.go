package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/internal/queuegen"
)

// treeDiff describes the first difference between two node trees in
// what yaml.v3 and the fast path both set (comments aside), "" when
// there is none.
func treeDiff(want, got *yaml.Node, path string) string {
	switch {
	case want == nil && got == nil:
		return ""
	case want == nil || got == nil:
		return fmt.Sprintf("%s: node %v, want %v", path, got, want)
	}
	type fields struct {
		Kind         yaml.Kind
		Style        yaml.Style
		Tag, Value   string
		Anchor       string
		Line, Column int
		Alias        bool
		Content      int
	}
	f := func(n *yaml.Node) fields {
		return fields{n.Kind, n.Style, n.Tag, n.Value, n.Anchor, n.Line, n.Column, n.Alias != nil, len(n.Content)}
	}
	if fw, fg := f(want), f(got); fw != fg {
		return fmt.Sprintf("%s: %+v, want %+v", path, fg, fw)
	}
	for i := range want.Content {
		if d := treeDiff(want.Content[i], got.Content[i], fmt.Sprintf("%s/%d", path, i)); d != "" {
			return d
		}
	}
	return ""
}

// agree checks the fast path against yaml.v3 on data: when the fast path
// reads it, yaml.v3 reads it too, into the same tree. It says whether
// the fast path read it.
func agree(t testing.TB, data []byte) bool {
	t.Helper()
	got := fastDocument(data)
	if got == nil {
		return false
	}
	var want yaml.Node
	if err := yaml.Unmarshal(data, &want); err != nil {
		t.Fatalf("fast path read what yaml.v3 rejects (%v):\n%s", err, data)
	}
	if d := treeDiff(&want, got, "doc"); d != "" {
		t.Fatalf("fast path differs from yaml.v3: %s\ninput:\n%q", d, data)
	}
	return true
}

// yamlSeeds are the YAML documents of the repository: every .yaml file,
// the literal blocks they hold (the queues.yaml of ConfigMaps), and the
// yaml blocks of the documentation.
func yamlSeeds(t testing.TB) map[string][]byte {
	t.Helper()
	seeds := map[string][]byte{"default.yaml": DefaultYAML()}
	fence := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != ".." {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".yaml", ".yml":
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			seeds[path] = b
			var doc yaml.Node
			if yaml.Unmarshal(b, &doc) == nil {
				literals(&doc, func(i int, s string) { seeds[fmt.Sprintf("%s#%d", path, i)] = []byte(s) })
			}
		case ".md":
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for i, m := range fence.FindAllSubmatch(b, -1) {
				seeds[fmt.Sprintf("%s#%d", path, i)] = m[1]
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return seeds
}

// literals calls f with every literal block scalar of the tree.
func literals(n *yaml.Node, f func(int, string)) {
	i := 0
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && n.Style == yaml.LiteralStyle {
			f(i, n.Value)
			i++
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
}

// trickyYAML are documents at the edges of the subset; some are the
// fast path's, some are not.
var trickyYAML = []string{
	"a: b\n",
	"a: b",
	"---\na: b\n",
	"--- \n# c\na: b\n",
	"# head\n\n\n  # indented comment\na: b # line\n# foot\n",
	"  a: b\n  c: d\n",
	"  a: b\n c: d\n",
	"a:\nb:\n",
	"a:   \nb: # comment\n  c: d\n",
	"a:\n  b:\n    c:\n      d: e\n  f: g\nh: i\n",
	"a:\n- x\n-   y\n- 'z'\nb: c\n",
	"a:\n  - x\n  - y\n",
	"a:\n  - x\n - y\n",
	"a:\n    - x\n  b: c\n",
	"- a\n- b\n",
	"- a: b\n  c: d\n- e: f\n",
	"- a: b\n  c:\n  - d\n  e:\n- f:\n- g\n",
	"-   a: b\n    c: d\n",
	"- a: b\n c: d\n",
	"- - a\n",
	"-\n  a: b\n",
	"- a\nb: c\n",
	"a: 1\nb: -1\nc: +1\nd: 0x1F\ne: 0o17\nf: 017\ng: 1_000\nh: 1.5\ni: 1e3\nj: .5\nk: .inf\nl: .NaN\nm: 2001-12-14\nn: 2001-12-14t21:59:43.10-05:00\n",
	"a: 1\nc: +1\nd: 0x1F\ne: 0o17\nf: 017\ng: 1_000\nh: 1.5\ni: 1e3\nj: .5\nk: .inf\nl: .NaN\nm: 2001-12-14\nn: 2001-12-14t21:59:43.10-05:00\no: 1.2.3\np: 12abc\nq: +.inf\nr: .x\ns: 0b101\nt: 99999999999999999999\n",
	"a: true\nb: True\nc: TRUE\nd: false\ne: yes\nf: no\ng: on\nh: off\ni: y\nj: n\n",
	"a: null\nb: Null\nc: NULL\nd: ~\ne: nil\nf: 'null'\ng: \"true\"\nh: '1'\n",
	"1: a\ntrue: b\nnull: c\n~: d\n.5: e\n0x10: f\n",
	"'quoted key': a\n\"double\": b\n'it''s': 'it''s'\n'': empty\n",
	"a: 'x''y' # c\nb: \"x'y\"\nc: 'x\"y'\nd: \"a#b\"\ne: 'a: b'\nf: \"#\"\n",
	"a: \"x\"#c\n",
	"a: 'x'y\n",
	"a: \"x\\ny\"\n",
	"a: 'multi\n  line'\n",
	"a: b\n  c\n",
	"a: b\n  # c\n  d\n",
	"a: b:c\nd: http://x.y/z\ne: x#y\nf: x #y\ng: x:\n",
	"a: b:c\nd: http://x.y/z\ne: x#y\nf: x #y\n",
	"b: ...\nc: .\nd: x---\n",
	"a: b: c\n",
	"a : b\n",
	"a:b\n",
	"a: x{y}[z],w\nb: it's\nc: say \"hi\"\n",
	"a: [x, y]\n",
	"a: {x: y}\n",
	"a: &x b\nc: *x\n",
	"a: !!str 1\n",
	"a: |\n  text\n",
	"a: >\n  text\n",
	"<<: {a: b}\n",
	"a: <<\n",
	"? a\n: b\n",
	"%YAML 1.2\n---\na: b\n",
	"a: b\n---\nc: d\n",
	"a: b\n...\n",
	"a: ---\nb: ...\nc: .\n",
	"a: b\r\nc: d\r\n",
	"a:\tb\n",
	"\ufeffa: b\n",
	"a: b\n\x00",
	"a: b\x7f\n",
	"ä: ö\nb: é x\nc: 'ü'\n- d\n",
	"ä: ö\nb: é x\nc: 'ü'\nquöte: \"ß\"\n",
	"a: \u2028b\n",
	"a: \u0085b\n",
	"a: \U0001F600\n",
	"a: \xff\n",
	"group.with.dots: a.b.c\nkey-with-dash: x\nkey_with_underscore: y\n",
	"a: trailing   \nb: 'q'   \nc:    d\n",
	"a: b\na: c\n",
	"",
	"\n\n",
	"# only a comment\n",
	"just a scalar\n",
	"'quoted scalar'\n",
	"partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: u1  g1\n",
	"partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: \" g1\"\n        adminacl: '*'\n        queues:\n          - name: a\n            parent: true\n",
	"a: " + strings.Repeat("x", 5000) + "\n",
	strings.Repeat("k", 1001) + ": v\n",
	strings.Repeat("k", 900) + ": v\n",
}

// deep is a mapping nested n levels.
func deep(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%sk%d:\n", strings.Repeat(" ", i), i)
	}
	return b.String()
}

// TestFastYAMLAgrees compares the fast path with yaml.v3 on every YAML
// document of the repository and on documents at the edges of the
// subset, and checks that the fast path reads the configurations it is
// for.
func TestFastYAMLAgrees(t *testing.T) {
	read := 0
	seeds := yamlSeeds(t)
	for _, data := range seeds {
		if agree(t, data) {
			read++
		}
	}
	// Block-style configurations are the fast path's; ldap.yaml and
	// placement.yaml write lists as [a, b], which yaml.v3 reads.
	for _, name := range []string{"../examples/teams.yaml", "../examples/yunikorn-acl.yaml", "../examples/yarn/usher.yaml", "../examples/diff/teams-next.yaml"} {
		if fastDocument(seeds[name]) == nil {
			t.Errorf("the fast path does not read %s", name)
		}
	}
	t.Logf("the fast path read %d of %d documents of the repository", read, len(seeds))
	for _, s := range trickyYAML {
		agree(t, []byte(s))
	}
	for _, n := range []int{100, 999, 1001, 3000} {
		agree(t, []byte(deep(n)))
	}
	for _, data := range [][]byte{DefaultYAML(), queuegen.Config(1000, 10000, nil), []byte(deep(100))} {
		if !agree(t, data) {
			t.Errorf("the fast path does not read %.80q…", data)
		}
	}
}

// TestTreeDiffCatches checks that the comparison of trees the tests rely
// on sees a wrong tag, column, line, value, style, kind or child.
func TestTreeDiffCatches(t *testing.T) {
	data := []byte("a:\n  - b: 1\n    c: 'd'\n")
	for _, c := range []struct {
		name  string
		spoil func(doc *yaml.Node)
	}{
		{"tag", func(d *yaml.Node) { d.Content[0].Content[1].Content[0].Content[1].Tag = "!!str" }},
		{"column", func(d *yaml.Node) { d.Content[0].Content[1].Content[0].Content[2].Column++ }},
		{"line", func(d *yaml.Node) { d.Content[0].Content[1].Line-- }},
		{"value", func(d *yaml.Node) { d.Content[0].Content[0].Value = "A" }},
		{"style", func(d *yaml.Node) { d.Content[0].Content[1].Content[0].Content[3].Style = 0 }},
		{"kind", func(d *yaml.Node) { d.Content[0].Content[1].Kind = yaml.MappingNode }},
		{"child", func(d *yaml.Node) {
			m := d.Content[0].Content[1].Content[0]
			m.Content = m.Content[:2]
		}},
	} {
		var want yaml.Node
		if err := yaml.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		got := fastDocument(data)
		if d := treeDiff(&want, got, "doc"); d != "" {
			t.Fatalf("before spoiling: %s", d)
		}
		c.spoil(got)
		if d := treeDiff(&want, got, "doc"); d == "" {
			t.Errorf("a wrong %s is not seen", c.name)
		} else {
			t.Logf("wrong %s: %s", c.name, d)
		}
	}
}

// FuzzFastYAML: whatever the fast path reads, yaml.v3 reads too, into
// the same tree.
func FuzzFastYAML(f *testing.F) {
	for _, data := range yamlSeeds(f) {
		f.Add(data)
	}
	for _, s := range trickyYAML {
		f.Add([]byte(s))
	}
	f.Add(queuegen.Config(30, 120, nil))
	f.Fuzz(func(t *testing.T, data []byte) { agree(t, data) })
}

// outcome is what Parse makes of data, as text: the diagnostics, or the
// partitions and queues compiled, and the warnings.
func outcome(data []byte, opts ...Option) string {
	c, err := Parse("f.yaml", data, opts...)
	return describe(c, err)
}

// loadOutcome is what Load makes of data written to path.
func loadOutcome(t *testing.T, path string, data []byte, opts ...Option) string {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, opts...)
	return describe(c, err)
}

func describe(c *Config, err error) string {
	var b strings.Builder
	if err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
		if ie, ok := err.(*InvalidError); ok {
			for _, w := range ie.Warnings {
				fmt.Fprintf(&b, "warning: %s\n", w)
			}
		}
		return b.String()
	}
	for _, name := range c.Snapshot.Partitions() {
		p, _ := c.Snapshot.Partition(name)
		fmt.Fprintf(&b, "partition %s: %v\n", name, p.Queues())
	}
	for _, w := range c.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

// TestFastPathSameOutcome parses every document of the repository and
// the edge cases with the fast path and without it, with Parse and with
// Load from a file (which tells ConfigMap manifests apart first): the
// configurations, errors and warnings, at their positions, are the same.
func TestFastPathSameOutcome(t *testing.T) {
	docs := [][]byte{queuegen.Config(200, 2000, nil)}
	for _, data := range yamlSeeds(t) {
		docs = append(docs, data)
	}
	for _, s := range trickyYAML {
		docs = append(docs, []byte(s))
	}
	// Mistakes the configuration code reports at a position.
	docs = append(docs,
		[]byte("partitions:\n  - name: default\n    queues:\n      - name: root\n        submitacl: u1  g1\n        Queues:\n        adminacl: 1\n        parent: maybe\n"),
		[]byte("partitions:\n  - name: default\n    queues:\n      - name: root\n        queues:\n          - name: a\n          - name: a\n          - name: 'b'\n            submitacl: \" g\"\n            submitacl: x\n"),
		[]byte("partitions:\n- name: x\n  queues:\n  - name: root\n    resources:\n      guaranteed:\n        memory: 1G\n  - name: other\n"),
		[]byte("partitions: 1\n"),
		[]byte("partitions:\n  - name: ü\n    queues:\n      - name: rööt\n        submitacl: ä,b c\n"),
	)
	off := func(o *options) { o.yamlOnly = true }
	path := filepath.Join(t.TempDir(), "f.yaml")
	for _, data := range docs {
		fast, fastLoad := outcome(data), loadOutcome(t, path, data)
		slow, slowLoad := outcome(data, off), loadOutcome(t, path, data, off)
		if fast != slow {
			t.Errorf("input:\n%s\nParse with the fast path:\n%s\nwith yaml.v3 alone:\n%s", data, fast, slow)
		}
		if fastLoad != slowLoad {
			t.Errorf("input:\n%s\nLoad with the fast path:\n%s\nwith yaml.v3 alone:\n%s", data, fastLoad, slowLoad)
		}
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestFastPathKeepsNoTree: a configuration read through the fast path
// keeps no more memory alive than one read by yaml.v3 alone, but for the
// text its values are cut from. The fast path's nodes sit in one array
// (8 MiB at 10,000 queues), which a single node kept by the
// configuration would keep whole.
func TestFastPathKeepsNoTree(t *testing.T) {
	data := queuegen.Config(10000, 100000, nil)
	kept := func(opts ...Option) int64 {
		before := liveHeap()
		c, err := Parse("gen.yaml", data, opts...)
		if err != nil {
			t.Fatal(err)
		}
		after := liveHeap()
		runtime.KeepAlive(c)
		return int64(after) - int64(before)
	}
	kept() // once for what the first load initializes
	slow := kept(func(o *options) { o.yamlOnly = true })
	fast := kept()
	t.Logf("kept alive: %.1f MiB with the fast path, %.1f MiB without (text: %.1f MiB)", float64(fast)/(1<<20), float64(slow)/(1<<20), float64(len(data))/(1<<20))
	if fast > slow+int64(len(data)) {
		t.Errorf("the fast path keeps %d bytes alive, yaml.v3 alone %d: more than the %d bytes of text", fast, slow, len(data))
	}
}
