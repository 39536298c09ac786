// Package yamlnode holds the yaml.v3 node helpers that config and
// importer share.
package yamlnode

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Value is the value of key in the mapping m; nil when m is nil, not a
// mapping or lacks key.
func Value(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// Encode writes n as YAML indented by two spaces; a tree that does not
// encode is a bug.
func Encode(n *yaml.Node) []byte {
	var b bytes.Buffer
	e := yaml.NewEncoder(&b)
	e.SetIndent(2)
	if err := e.Encode(n); err != nil {
		panic("yamlnode: a YAML tree does not encode: " + err.Error())
	}
	e.Close()
	return b.Bytes()
}

// Kind names what n is, for messages: "a mapping", "a list", "empty",
// "the value \"x\"".
func Kind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("the value %q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}
