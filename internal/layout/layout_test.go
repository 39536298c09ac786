// Package layout holds the test of the house's layers: every package of
// the module has a layer (docs/architecture.md draws them), and a package
// imports only packages of layers below its own; the ground floor's
// utilities (internal/*) may also use each other.
package layout

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/usherhq/usher"

// layers lists the packages of each layer, lowest first; a name ending in
// "/..." stands for every package below it.
var layers = [][]string{
	{"internal/..."},
	{"acl", "auth", "hack/authtest", "hack/slapdtest", "hack/benchcpu", "hack/queuegen", "hack/pprofserve"},
	{"policy", "identity"},
	{"placement", "application", "identity/cache", "identity/ldap", "admission/settings"},
	{"identity/resolvers"},
	{"config", "cluster", "native"},
	{"engine", "impact", "importer", "admission", "decision"},
	{"serving", "answer"},
	{"server", "policytest", "doctor", "report"},
	{"cmd/usher/cli", "cmd/kubectl-usher/plugin", "cmd/usher-load", "hack/..."},
	{"cmd/usher", "cmd/kubectl-usher", "deploy"},
}

// forbidden are imports the layers forbid that the house once had, each
// checked against every package the importer depends on.
var forbidden = [][2]string{
	{"config", "admission"},
	{"engine", "admission"},
	{"admission", "server"},
	{"policytest", "cmd/usher/cli"},
	{"native", "admission"},
}

func layerOf(pkg string) int {
	for i, l := range layers {
		for _, p := range l {
			if p == pkg || strings.HasSuffix(p, "/...") && strings.HasPrefix(pkg, strings.TrimSuffix(p, "...")) {
				return i
			}
		}
	}
	return -1
}

type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func list(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps=false", "-json=ImportPath,Imports,Deps", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	for dec := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		p.ImportPath = strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestLayers(t *testing.T) {
	pkgs := list(t)
	if len(pkgs) < 30 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		own := layerOf(p.ImportPath)
		if own < 0 {
			t.Errorf("%s has no layer: add it to the table (and to docs/architecture.md)", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			rest, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			l := layerOf(rest)
			ground := own == 0 && l == 0
			if l >= own && !ground {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only layers below its own", p.ImportPath, own, rest, l)
			}
		}
	}
	for _, f := range forbidden {
		i := slices.IndexFunc(pkgs, func(p listed) bool { return p.ImportPath == f[0] })
		if i < 0 {
			t.Errorf("no package %s", f[0])
			continue
		}
		if slices.Contains(pkgs[i].Deps, module+"/"+f[1]) {
			t.Errorf("go list -deps %s shows %s", f[0], f[1])
		}
	}
}
