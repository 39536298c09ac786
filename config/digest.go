package config

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"

	"go.yaml.in/yaml/v3"
)

// digest hashes n's YAML, aliases expanded, without its queues key: a
// partition's or a queue's own settings.
func (p *parser) digest(n *yaml.Node) [32]byte {
	h := sha256.New()
	var walk func(n *yaml.Node, aliased bool)
	walk = func(n *yaml.Node, aliased bool) {
		if aliased {
			if p.digested++; p.digested == maxNodes {
				p.errorf(n, "aliases expand the configuration by more than %d YAML nodes", maxNodes)
			}
			if p.digested >= maxNodes {
				return
			}
		}
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			walk(n.Alias, true)
			return
		}
		fmt.Fprintf(h, "%d %q %q [", n.Kind, n.Tag, n.Value)
		for _, c := range n.Content {
			walk(c, aliased)
		}
		h.Write([]byte{']'})
	}
	for i := 0; i < len(n.Content); i++ {
		if n.Kind == yaml.MappingNode && i%2 == 0 && n.Content[i].Value == "queues" {
			i++
			continue
		}
		walk(n.Content[i], false)
	}
	return [32]byte(h.Sum(nil))
}

// keysDigest hashes a ConfigMap's keys but the partitions': Digests[""].
func keysDigest(keys map[string]keyValue) [32]byte {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		fmt.Fprintf(h, "%q=%q;", k, keys[k].value)
	}
	return [32]byte(h.Sum(nil))
}
