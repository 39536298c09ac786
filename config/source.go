package config

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/internal/safefile"
	"github.com/usherhq/usher/internal/yamlnode"
)

// QueuesKey is the ConfigMap key holding the partitions, as in YuniKorn's
// yunikorn-configs ConfigMap, when service.policyGroup is not set.
const QueuesKey = "queues.yaml"

// PolicyGroupKey is YuniKorn's ConfigMap key naming the policy group, whose
// partitions are in the key "<group>.yaml" (default queues.yaml).
const PolicyGroupKey = "service.policyGroup"

// YuniKorn's two ConfigMaps: the Helm chart writes its yunikornDefaults
// values into yunikorn-defaults; yunikorn-configs is the operator's, and
// each of its keys wins over the same key of yunikorn-defaults.
const (
	DefaultsConfigMap = "yunikorn-defaults"
	ConfigsConfigMap  = "yunikorn-configs"
)

// UsherKey is the ConfigMap key holding usher's own settings, outside the
// partitions document YuniKorn's scheduler reads (docs/yunikorn.md).
const UsherKey = "usher.yaml"

// queuesKey is the key holding the partitions in data: "<group>.yaml"
// for the service.policyGroup setting, queues.yaml without one.
func queuesKey(data map[string]keyValue) string {
	if g := strings.TrimSpace(data[PolicyGroupKey].value); g != "" {
		return g + ".yaml"
	}
	return QueuesKey
}

// source is a configuration as read from where it lives, before parsing:
// the queues document and, for a ConfigMap, its other keys.
type source struct {
	name   string // the file name diagnostics of the queues document carry
	dir    string // relative paths inside the document are against it
	queues []byte // the usher YAML document (a ConfigMap's queues.yaml key)
	// doc is queues as read while the forms were told apart (a usher
	// YAML file of one document); nil: parse reads queues.
	doc *yaml.Node
	// lineOff and colOff place the queues document in its file: a
	// manifest's literal block starts after line lineOff, indented colOff.
	lineOff, colOff int
	keys            map[string]keyValue // a ConfigMap's keys but queues.yaml; nil for a file
	origin          string              // the ConfigMap as a whole: its directory, manifest or name
	broke           []error             // files read that break a rule of a later release (options.readFile)
	yunikorn        bool                // the partitions are in one of YuniKorn's ConfigMaps (yunikornCheck)
	usher           *keyValue           // the ConfigMap's usher.yaml key, if any
	// missing is the group service.policyGroup names when the ConfigMap
	// lacks its key: queues is then YuniKorn's default configuration.
	missing string
}

// keyValue is one ConfigMap key with where it was written: its own file
// (a mounted directory), or a node of a manifest.
type keyValue struct {
	value string
	file  string
	node  *yaml.Node // nil: no position inside file
	raw   []byte     // the manifest node is in, to place a literal block
	cm    string     // the name of the ConfigMap holding it, if known
}

// Files is a configuration as read from its path once (a file, or a mounted
// ConfigMap's keys): its sum and what LoadFiles parses are the same bytes.
type Files struct {
	path  string
	dir   bool
	files []file // the file; for a directory, its keys in name order
}

type file struct {
	name  string
	data  []byte
	broke error // options.readFile
}

// Read reads path, a file or a directory where a ConfigMap is mounted,
// for LoadFiles. The entries starting with ".." are kubelet's bookkeeping
// (..data and the timestamped directory it links to) and are skipped.
func Read(path string, opts ...Option) (*Files, error) {
	o := newOptions(opts)
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	f := &Files{path: path, dir: st.IsDir()}
	if !f.dir {
		b, broke, err := o.readFile(path, MaxFileSize)
		if err != nil {
			return nil, err
		}
		f.files = []file{{path, b, broke}}
		return f, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name := filepath.Join(path, e.Name())
		if st, err := os.Stat(name); strings.HasPrefix(e.Name(), "..") || err != nil || st.IsDir() {
			continue // kubelet's bookkeeping, a dangling link or a directory is no key
		}
		b, broke, err := o.readFile(name, MaxFileSize)
		if err != nil {
			return nil, err
		}
		f.files = append(f.files, file{e.Name(), b, broke})
	}
	return f, nil
}

// Sum is the sha256 of what f holds: the file's content, or each key's
// name, content and length.
func (f *Files) Sum() [32]byte {
	if !f.dir {
		return sha256.Sum256(f.files[0].data)
	}
	h := sha256.New()
	for _, k := range f.files {
		fmt.Fprintf(h, "%s\x00", k.name)
		h.Write(k.data)
		fmt.Fprintf(h, "\x00%d\x00", len(k.data))
	}
	return [32]byte(h.Sum(nil))
}

// source tells apart the forms f may hold: a directory where a ConfigMap
// is mounted, ConfigMaps written as YAML (readManifests), or a usher YAML file.
func (f *Files) source() (src *source, err error) {
	if f.dir {
		data := map[string]keyValue{}
		for _, k := range f.files {
			data[k.name] = keyValue{value: string(k.data), file: filepath.Join(f.path, k.name)}
		}
		src, err = dataSource(f.path, f.path, data)
	} else {
		path, b := f.path, f.files[0].data
		docs := documents(b)
		var ok bool
		if src, ok, err = readManifests(path, b, docs); !ok && err == nil {
			src = &source{name: path, dir: filepath.Dir(path), queues: b}
			if len(docs) == 1 {
				src.doc = docs[0]
			}
		}
	}
	for _, k := range f.files {
		if k.broke != nil && src != nil {
			src.broke = append(src.broke, k.broke)
		}
	}
	return src, err
}

// dataSource picks the partitions (queuesKey) and usher.yaml out of a
// ConfigMap's data, keeping the other keys for the admission settings; a
// missing key's partitions are YuniKorn's default (parser.missingGroup).
func dataSource(origin, dir string, data map[string]keyValue) (*source, error) {
	key := queuesKey(data)
	var usher *keyValue
	if u, ok := data[UsherKey]; ok && key != UsherKey {
		usher = &u
		delete(data, UsherKey)
	}
	q, ok := data[key]
	if !ok {
		if key == QueuesKey {
			return nil, fmt.Errorf("%s: no %s key holding the partitions", origin, key)
		}
		return &source{name: "<YuniKorn's default configuration>", dir: dir, queues: defaultYAML, keys: data,
			origin: origin, usher: usher, missing: strings.TrimSuffix(key, ".yaml")}, nil
	}
	delete(data, key)
	at := q.placeOf(key)
	cm := q.cm[strings.LastIndexByte(q.cm, '/')+1:] // NS/name or name
	return &source{name: at.file, lineOff: at.lineOff, colOff: at.colOff, dir: dir, queues: []byte(q.value), keys: data,
		origin: origin, yunikorn: cm == DefaultsConfigMap || cm == ConfigsConfigMap, usher: usher}, nil
}

// placeOf places the document that kv, the value of key, holds.
func (kv keyValue) placeOf(key string) place {
	switch {
	case kv.node == nil:
	case kv.node.Style == yaml.LiteralStyle:
		// The document's lines are the manifest's, from the line after
		// "key: |", less the block's indentation.
		return place{kv.file, kv.node.Line, blockIndent(kv.raw, kv.node.Line)}
	default:
		// No exact mapping (a quoted or folded value): name the key.
		return place{file: kv.file + "[" + key + "]"}
	}
	return place{file: kv.file}
}

// layer is one ConfigMap's data read from a file.
type layer struct {
	name string // the ConfigMap's name: DefaultsConfigMap for Helm values
	data map[string]keyValue
}

// readManifests reads b's documents (read) as ConfigMaps (readLayer) and
// says (ok) whether they are; a single mapping holding partitions is a usher
// YAML file (ok false). Several documents, or a List's items (kubectl get
// configmap A B -o yaml), are merged as YuniKorn merges its two:
// yunikorn-defaults first, then the others in order, a later key winning.
func readManifests(path string, b []byte, read []*yaml.Node) (*source, bool, error) {
	var docs []*yaml.Node
	for _, doc := range read {
		if len(doc.Content) == 0 || doc.Content[0].Tag == "!!null" {
			continue
		}
		root := doc.Content[0]
		if kind := yamlnode.Value(root, "kind"); kind != nil && kind.Value == "List" {
			if items := yamlnode.Value(root, "items"); items != nil && items.Kind == yaml.SequenceNode {
				docs = append(docs, items.Content...)
				continue
			}
		}
		docs = append(docs, root)
	}
	var layers []layer
	for i, root := range docs {
		if root.Kind != yaml.MappingNode {
			if len(docs) == 1 {
				return nil, false, nil
			}
			return nil, true, fmt.Errorf("%s:%d:%d: document %d is %s, not a ConfigMap", path, root.Line, root.Column, i+1, yamlnode.Kind(root))
		}
		l, ok, err := readLayer(path, b, root)
		if err != nil {
			return nil, true, err
		}
		if !ok {
			if len(docs) == 1 {
				return nil, false, nil
			}
			return nil, true, fmt.Errorf("%s:%d:%d: document %d is not a ConfigMap, Helm values with yunikornDefaults, or a ConfigMap's data", path, root.Line, root.Column, i+1)
		}
		layers = append(layers, l)
	}
	if len(layers) == 0 {
		return nil, false, nil
	}
	data := map[string]keyValue{}
	for _, defaults := range []bool{true, false} {
		for _, l := range layers {
			if (l.name == DefaultsConfigMap) == defaults {
				maps.Copy(data, l.data)
			}
		}
	}
	src, err := dataSource(path, filepath.Dir(path), data)
	return src, true, err
}

// documents reads b's YAML documents; nil when b is not YAML (parse
// reports the error with its position).
func documents(b []byte) []*yaml.Node {
	var docs []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		doc := new(yaml.Node)
		if err := dec.Decode(doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs
			}
			return nil
		}
		docs = append(docs, doc)
	}
}

// readLayer reads one document: a ConfigMap manifest, the Helm chart's
// values with yunikornDefaults, or a ConfigMap's data on its own
// (looksLikeData); ok false for anything else.
func readLayer(path string, b []byte, root *yaml.Node) (layer, bool, error) {
	var l layer
	var data *yaml.Node
	switch {
	case yamlnode.Value(root, "kind") != nil && yamlnode.Value(root, "kind").Value == "ConfigMap":
		data = yamlnode.Value(root, "data")
		if n := yamlnode.Value(yamlnode.Value(root, "metadata"), "name"); n != nil {
			l.name = n.Value
		}
		if data == nil || data.Kind != yaml.MappingNode {
			return l, true, fmt.Errorf("%s:%d:%d: a ConfigMap manifest without data", path, root.Line, root.Column)
		}
	case yamlnode.Value(root, "yunikornDefaults") != nil:
		data, l.name = yamlnode.Value(root, "yunikornDefaults"), DefaultsConfigMap
		if data.Kind != yaml.MappingNode {
			return l, true, fmt.Errorf("%s:%d:%d: yunikornDefaults must be a mapping of ConfigMap keys, not %s", path, data.Line, data.Column, yamlnode.Kind(data))
		}
	case yamlnode.Value(root, "partitions") == nil && looksLikeData(root):
		data = root
	default:
		return l, false, nil
	}
	l.data = map[string]keyValue{}
	for i := 0; i+1 < len(data.Content); i += 2 {
		k, v := data.Content[i], data.Content[i+1]
		if v.Kind != yaml.ScalarNode {
			return l, true, fmt.Errorf("%s:%d:%d: ConfigMap key %s must hold a string, not %s", path, v.Line, v.Column, k.Value, yamlnode.Kind(v))
		}
		l.data[k.Value] = keyValue{value: v.Value, file: path, node: v, raw: b, cm: l.name}
	}
	return l, true, nil
}

// looksLikeData reports whether a mapping's keys are a YuniKorn ConfigMap's.
func looksLikeData(n *yaml.Node) bool {
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i].Value
		if strings.HasSuffix(k, ".yaml") || strings.HasPrefix(k, "service.") || strings.HasPrefix(k, "admissionController.") {
			return true
		}
	}
	return false
}

// blockIndent is the indentation of the first non-blank line after line (1-based) in b.
func blockIndent(b []byte, line int) int {
	lines := strings.Split(string(b), "\n")
	for _, l := range lines[min(line, len(lines)):] {
		if t := strings.TrimLeft(l, " "); strings.TrimSpace(t) != "" {
			return len(l) - len(t)
		}
	}
	return 0
}

// readFile reads a file the configuration is or names: a regular file of at
// most limit bytes (package safefile). Unless strict, one that earlier
// releases read (any type, up to MaxFileSize) is read, and broke says why not.
func (o options) readFile(path string, limit int64) (data []byte, broke, err error) {
	var legacy int64
	if !o.strict {
		legacy = MaxFileSize
	}
	return safefile.Read(path, limit, legacy)
}
