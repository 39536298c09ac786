// Package yamlnode holds the yaml.v3 helpers that config, importer and
// policytest share.
package yamlnode

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

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

// SyntaxLine splits a yaml.v3 syntax error into its line and problem:
// yaml.v3 writes the line only into its text, "yaml: line N: problem".
// line is 0 when the text names none.
func SyntaxLine(err error) (line int, problem string) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if n, problem, ok := strings.Cut(rest, ": "); ok {
			if l, err := strconv.Atoi(n); err == nil {
				return l, problem
			}
		}
	}
	return 0, msg
}
