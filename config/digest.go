package config

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"go.yaml.in/yaml/v3"
)

// digest hashes n's YAML, aliases expanded, without its queues key: a
// partition's or a queue's own settings.
func (p *parser) digest(n *yaml.Node) (out [32]byte) {
	if p.hash == nil {
		p.hash = sha256.New()
	}
	p.hash.Reset()
	for i := 0; i < len(n.Content); i++ {
		if n.Kind == yaml.MappingNode && i%2 == 0 && n.Content[i].Value == "queues" {
			i++
			continue
		}
		p.hashNode(n.Content[i], false)
	}
	p.hash.Sum(out[:0])
	return out
}

// hashNode writes n to p.hash in pre-order: kind, children, tag, value;
// past maxNodes nodes reached through aliases, an error.
func (p *parser) hashNode(n *yaml.Node, aliased bool) {
	if aliased {
		if p.digested++; p.digested == maxNodes {
			p.errorf(n, "aliases expand the configuration by more than %d YAML nodes", maxNodes)
		}
		if p.digested >= maxNodes {
			return
		}
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		p.hashNode(n.Alias, true)
		return
	}
	b := binary.AppendUvarint(append(p.buf[:0], byte(n.Kind)), uint64(len(n.Content)))
	b = append(binary.AppendUvarint(b, uint64(len(n.Tag))), n.Tag...)
	p.buf = append(binary.AppendUvarint(b, uint64(len(n.Value))), n.Value...)
	p.hash.Write(p.buf)
	for _, c := range n.Content {
		p.hashNode(c, aliased)
	}
}

// keysDigest hashes a ConfigMap's keys but the partitions': Digests[""].
func keysDigest(keys map[string]keyValue) [32]byte {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		fmt.Fprintf(h, "%q=%q;", k, keys[k].value)
	}
	return [32]byte(h.Sum(nil))
}
