package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/admission"
)

// QueuesKey is the ConfigMap key holding the partitions, as in YuniKorn's
// yunikorn-configs ConfigMap.
const QueuesKey = "queues.yaml"

// FromConfigMap reads a YuniKorn-style ConfigMap's data: the queues.yaml key
// holds the partitions (and may hold an admissionController block), and
// flat admissionController.* keys hold the admission settings. Setting the
// admission controller both ways is an error, so that no setting is
// silently ignored. name is used in diagnostics.
func FromConfigMap(name string, data map[string]string) (*Config, error) {
	queues, ok := data[QueuesKey]
	if !ok {
		return nil, fmt.Errorf("%s: no %s key", name, QueuesKey)
	}
	c, err := Parse(name+"/"+QueuesKey, []byte(queues))
	if err != nil {
		return nil, err
	}
	flat := false
	for k := range data {
		if strings.HasPrefix(k, "admissionController.") {
			flat = true
		}
	}
	if !flat {
		return c, nil
	}
	if hasAdmissionBlock(queues) {
		return nil, fmt.Errorf("%s: the admission controller is set both in %s and as admissionController.* keys: use one", name, QueuesKey)
	}
	ac, err := admission.FromConfigMap(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c.Admission = ac.Defaulted()
	if c.AdmissionCompiled, err = c.Admission.Compile(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if refs := references(ac, c.Snapshot); len(refs) > 0 {
		msgs := make([]string, len(refs))
		for i, r := range refs {
			msgs[i] = name + ": " + r.String()
		}
		return nil, errors.New(strings.Join(msgs, "\n"))
	}
	for _, w := range c.Admission.Warnings() {
		// Name the key the ConfigMap uses: YuniKorn's filtering.* spelling
		// when that is the one set.
		if alias, ok := configMapAliases[w.Setting]; ok {
			if _, set := data[alias]; set {
				w.Setting = alias
			}
		}
		c.Warnings = append(c.Warnings, Diagnostic{File: name, Severity: Warning, Msg: w.String()})
	}
	return c, nil
}

// configMapAliases are the ConfigMap keys YuniKorn spells differently
// from usher's YAML path for the same setting.
var configMapAliases = map[string]string{
	"admissionController.processNamespaces": "admissionController.filtering.processNamespaces",
	"admissionController.bypassNamespaces":  "admissionController.filtering.bypassNamespaces",
}

func hasAdmissionBlock(queues string) bool {
	var doc struct {
		A *yaml.Node `yaml:"admissionController"`
	}
	return yaml.Unmarshal([]byte(queues), &doc) == nil && doc.A != nil
}

// LoadAny reads a configuration from path, which may be a usher YAML file,
// a ConfigMap manifest (a YAML document of kind ConfigMap), or a directory
// where a ConfigMap is mounted (one file per key).
func LoadAny(path string) (*Config, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		data := map[string]string{}
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			// Kubernetes mounts keys as symlinks into a ..data directory;
			// skip its bookkeeping entries.
			if strings.HasPrefix(e.Name(), "..") {
				continue
			}
			b, err := readLimited(filepath.Join(path, e.Name()))
			if err != nil {
				return nil, err
			}
			data[e.Name()] = string(b)
		}
		return FromConfigMap(path, data)
	}
	b, err := readLimited(path)
	if err != nil {
		return nil, err
	}
	var head struct {
		Kind string            `yaml:"kind"`
		Data map[string]string `yaml:"data"`
	}
	if yaml.Unmarshal(b, &head) == nil && head.Kind == "ConfigMap" {
		return FromConfigMap(path, head.Data)
	}
	return Load(path)
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

// settingNode finds the node of a dotted admission setting
// (admissionController.accessControl.externalUsers,
// admissionController.queueMapping.table[1].queue) inside the
// admissionController block, falling back to the deepest node found.
func settingNode(block *yaml.Node, setting string) *yaml.Node {
	n := block
	for _, part := range strings.Split(strings.TrimPrefix(setting, "admissionController."), ".") {
		name, index, _ := strings.Cut(part, "[")
		if n == nil || n.Kind != yaml.MappingNode {
			return n
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == name {
				next = n.Content[i+1]
			}
		}
		if next == nil {
			return n
		}
		n = next
		for index != "" {
			var i int
			if _, err := fmt.Sscanf(index, "%d]", &i); err != nil || n.Kind != yaml.SequenceNode || i < 0 || i >= len(n.Content) {
				return n
			}
			n = n.Content[i]
			_, index, _ = strings.Cut(index, "[")
		}
	}
	return n
}

// admissionWarning reports w at the pattern it is about: the item of a
// list, or the pattern's place in a comma-separated string.
func (p *parser) admissionWarning(adm *yaml.Node, w admission.Warning) {
	n := settingNode(adm, w.Setting)
	switch {
	case n == nil || w.Pattern == "":
	case n.Kind == yaml.SequenceNode:
		items := 0
		for _, item := range n.Content {
			if item.Kind == yaml.ScalarNode && strings.TrimSpace(item.Value) == "" {
				continue // dropped as blank, as Patterns does
			}
			if items == w.Index {
				p.warnf(item, "%s", w)
				return
			}
			items++
		}
	case n.Kind == yaml.ScalarNode:
		if off, ok := patternOffset(n.Value, w.Index); ok {
			p.atOffset(n, off, Warning, w.String())
			return
		}
	}
	p.warnf(n, "%s", w)
}

// patternOffset is the byte offset in s of the index-th pattern of the
// comma-separated list s, counted as admission.ParsePatterns counts them.
func patternOffset(s string, index int) (int, bool) {
	off, items := 0, 0
	for part := range strings.SplitSeq(s, ",") {
		if t := strings.TrimSpace(part); t != "" {
			if items == index {
				return off + strings.Index(part, t), true
			}
			items++
		}
		off += len(part) + 1
	}
	return 0, false
}
