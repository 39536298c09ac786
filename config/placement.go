package config

import (
	"cmp"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/internal/yamlnode"
	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// PlacementRules returns the partition's placementrules, or YuniKorn's
// implicit provided rule without create when it configures none.
func (p *Partition) PlacementRules() *placement.Rules {
	return cmp.Or(p.Placement, placement.Implicit())
}

// ruleNodes are the YAML nodes of one placement rule, for positions: the
// rule's, and each key's by its placement.Problem Field.
type ruleNodes struct {
	rule   *yaml.Node
	at     map[string]*yaml.Node
	parent *ruleNodes
}

// placementUse is a partition's placementrules, checked once the policy is compiled.
type placementUse struct {
	partition string
	rules     *placement.Rules
	nodes     []*ruleNodes
}

// placementRules parses a partition's placementrules list (YuniKorn's schema).
func (p *parser) placementRules(partition string, n *yaml.Node) *placement.Rules {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "placementrules must be a list of rules, not %s", yamlnode.Kind(n))
		return nil
	}
	var specs []placement.Spec
	var nodes []*ruleNodes
	for _, rn := range n.Content {
		s, rns, ok := p.placementRule(rn)
		if !ok {
			return nil
		}
		specs = append(specs, s)
		nodes = append(nodes, rns)
	}
	rules, problems := placement.Compile(specs)
	for _, pr := range problems {
		p.at(problemNode(nodes, pr), severity(pr.Warning), "placement", "partition %s: %v", partition, pr)
	}
	if rules != nil && len(specs) > 0 {
		p.placement = append(p.placement, placementUse{partition: partition, rules: rules, nodes: nodes})
		return rules
	}
	return nil
}

func severity(warning bool) Severity {
	if warning {
		return Warning
	}
	return Error
}

func (p *parser) placementRule(n *yaml.Node) (placement.Spec, *ruleNodes, bool) {
	var s placement.Spec
	rn := &ruleNodes{rule: n, at: map[string]*yaml.Node{}}
	ok := p.mapping(n, "placement rule", map[string]func(k, v *yaml.Node){
		"name":  func(k, v *yaml.Node) { s.Name, _ = p.str(v, "rule name"); rn.at["name"] = v },
		"value": func(k, v *yaml.Node) { s.Value, _ = p.str(v, "rule value"); rn.at["value"] = v },
		"create": func(k, v *yaml.Node) {
			rn.at["create"] = v
			if err := v.Decode(&s.Create); err != nil {
				p.errorf(v, "create must be true or false, not %s", yamlnode.Kind(v))
			}
		},
		"filter": func(k, v *yaml.Node) {
			p.mapping(v, "filter", map[string]func(k, v *yaml.Node){
				"type":   func(k, v *yaml.Node) { s.Filter.Type, _ = p.str(v, "filter type"); rn.at["filter.type"] = v },
				"users":  func(k, v *yaml.Node) { s.Filter.Users = p.stringList(v, "filter users"); rn.at["filter.users"] = v },
				"groups": func(k, v *yaml.Node) { s.Filter.Groups = p.stringList(v, "filter groups"); rn.at["filter.groups"] = v },
			})
		},
		"parent": func(k, v *yaml.Node) {
			ps, pn, ok := p.placementRule(v)
			if ok {
				s.Parent, rn.parent = &ps, pn
			}
		},
	})
	if !ok {
		return s, rn, false
	}
	if rn.at["name"] == nil {
		p.errorf(n, "placement rule without a name: want provided, user, fixed or tag")
		return s, rn, false
	}
	return s, rn, true
}

func (p *parser) stringList(n *yaml.Node, what string) []string {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "%s must be a list of names, not %s", what, yamlnode.Kind(n))
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for _, e := range n.Content {
		if s, ok := p.str(e, what+" entry"); ok {
			out = append(out, s)
		}
	}
	return out
}

// problemNode finds the node a placement problem is about.
func problemNode(nodes []*ruleNodes, pr placement.Problem) *yaml.Node {
	if pr.Rule >= len(nodes) {
		return nil
	}
	rn := nodes[pr.Rule]
	for d := 0; d < pr.Depth && rn.parent != nil; d++ {
		rn = rn.parent
	}
	at := rn.at[pr.Field]
	if i := pr.Entry; at != nil && i >= 0 && i < len(at.Content) {
		at = at.Content[i] // an entry of filter.users or filter.groups
	}
	return cmp.Or(at, rn.rule)
}

// checkPlacement checks the placement rules against the compiled queues, as YuniKorn does.
func (p *parser) checkPlacement(snap *policy.Snapshot) {
	for _, u := range p.placement {
		cp, err := snap.Partition(u.partition)
		if err != nil {
			continue
		}
		for _, pr := range u.rules.Check(cp) {
			p.at(problemNode(u.nodes, pr), severity(pr.Warning), "placement", "partition %s: %v", u.partition, pr)
		}
	}
}
