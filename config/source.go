package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// QueuesKey is the ConfigMap key holding the partitions, as in YuniKorn's
// yunikorn-configs ConfigMap.
const QueuesKey = "queues.yaml"

// source is a configuration as read from where it lives, before parsing:
// the queues document and, for a ConfigMap, its other keys.
type source struct {
	// name is the file name diagnostics of the queues document carry.
	name string
	// dir is the directory relative paths inside the document are
	// resolved against.
	dir string
	// queues is the usher YAML document (a ConfigMap's queues.yaml key).
	queues []byte
	// lineOff and colOff place the queues document inside the file named
	// name: a literal block scalar of a ConfigMap manifest starts on the
	// line after lineOff, indented by colOff.
	lineOff, colOff int
	// keys holds a ConfigMap's keys other than queues.yaml; nil for a
	// usher YAML file.
	keys map[string]keyValue
	// origin names the ConfigMap as a whole: its directory, manifest or
	// name.
	origin string
}

// keyValue is one ConfigMap key with where it was written: its own file
// (a mounted directory), or a node of a manifest.
type keyValue struct {
	value string
	file  string
	node  *yaml.Node // nil: no position inside file
}

// readSource reads path: a directory where a ConfigMap is mounted, a
// ConfigMap manifest, or a usher YAML file.
func readSource(path string) (*source, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return readDir(path)
	}
	b, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	if src, ok, err := readManifest(path, b); ok || err != nil {
		return src, err
	}
	return &source{name: path, dir: filepath.Dir(path), queues: b}, nil
}

// readDir reads a ConfigMap mounted as a directory: one file per key.
// Kubernetes mounts each key as a symlink into a ..data directory that
// points at a timestamped ..YYYY_MM_DD… directory; the entries starting
// with ".." are that bookkeeping and are skipped, the keys are read
// through their links.
func readDir(dir string) (*source, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	data := map[string]keyValue{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		file := filepath.Join(dir, e.Name())
		if st, err := os.Stat(file); err != nil || st.IsDir() {
			continue // a dangling link or a directory is no key
		}
		b, err := readLimited(file)
		if err != nil {
			return nil, err
		}
		data[e.Name()] = keyValue{value: string(b), file: file}
	}
	q, ok := data[QueuesKey]
	if !ok {
		return nil, fmt.Errorf("%s: a ConfigMap directory without a %s key", dir, QueuesKey)
	}
	delete(data, QueuesKey)
	return &source{name: q.file, dir: dir, queues: []byte(q.value), keys: data, origin: dir}, nil
}

// readManifest reads b as a ConfigMap manifest when it is one (a YAML
// mapping with kind: ConfigMap); ok false means it is not.
func readManifest(path string, b []byte) (*source, bool, error) {
	var doc yaml.Node
	if yaml.Unmarshal(b, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, false, nil
	}
	root := doc.Content[0]
	if kind := mapValue(root, "kind"); kind == nil || kind.Value != "ConfigMap" {
		return nil, false, nil
	}
	data := mapValue(root, "data")
	if data == nil || data.Kind != yaml.MappingNode {
		return nil, true, fmt.Errorf("%s: a ConfigMap manifest without data", path)
	}
	src := &source{name: path, dir: filepath.Dir(path), keys: map[string]keyValue{}, origin: path}
	var queues *yaml.Node
	for i := 0; i+1 < len(data.Content); i += 2 {
		k, v := data.Content[i], data.Content[i+1]
		if k.Value == QueuesKey {
			queues = v
			continue
		}
		src.keys[k.Value] = keyValue{value: v.Value, file: path, node: v}
	}
	if queues == nil {
		return nil, true, fmt.Errorf("%s:%d:%d: a ConfigMap without a %s key", path, data.Line, data.Column, QueuesKey)
	}
	src.queues = []byte(queues.Value)
	if queues.Style == yaml.LiteralStyle {
		// The document's lines are the manifest's, from the line after
		// "queues.yaml: |", less the block's indentation.
		src.lineOff, src.colOff = queues.Line, blockIndent(b, queues.Line)
	} else {
		// No exact mapping (a quoted or folded value): name the key.
		src.name = path + "[" + QueuesKey + "]"
	}
	return src, true, nil
}

// blockIndent is the indentation of the first non-blank line after line
// (1-based) in b.
func blockIndent(b []byte, line int) int {
	lines := strings.Split(string(b), "\n")
	for _, l := range lines[min(line, len(lines)):] {
		if t := strings.TrimLeft(l, " "); strings.TrimSpace(t) != "" {
			return len(l) - len(t)
		}
	}
	return 0
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// configMapSource is the source of a ConfigMap's data held in memory.
func configMapSource(name string, data map[string]string) (*source, error) {
	queues, ok := data[QueuesKey]
	if !ok {
		return nil, fmt.Errorf("%s: no %s key", name, QueuesKey)
	}
	src := &source{name: name + "/" + QueuesKey, dir: ".", queues: []byte(queues), keys: map[string]keyValue{}, origin: name}
	for k, v := range data {
		if k != QueuesKey {
			src.keys[k] = keyValue{value: v, file: name}
		}
	}
	return src, nil
}

// flat returns the admissionController.* keys, and whether there are any.
func (s *source) flat() (map[string]string, bool) {
	out := map[string]string{}
	for k, v := range s.keys {
		if strings.HasPrefix(k, "admissionController.") {
			out[k] = v.value
		}
	}
	return out, len(out) > 0
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func readLimited(path string) ([]byte, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s: %d bytes: larger than the %d byte limit", path, st.Size(), MaxFileSize)
	}
	return os.ReadFile(path)
}
