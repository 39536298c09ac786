package config

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/internal/yamlnode"
)

// ykConfig mirrors yunikorn-core's SchedulerConfig (pkg/common/configs/config.go):
// the keys its strict decoder knows, a field's name in lower case, and the
// types it decodes their values into.
type ykConfig struct {
	Partitions []struct {
		Name           string
		Queues         []ykQueue
		PlacementRules []ykRule
		Limits         []ykLimit
		Preemption     struct{ Enabled, QuotaPreemptionEnabled *bool }
		NodeSortPolicy struct {
			Type            string
			ResourceWeights map[string]float64
		}
		UserGroupResolver struct{ Type string }
	}
	Checksum string
}

type ykQueue struct {
	Name                string
	Parent              bool
	Resources           ykResources
	MaxApplications     uint64
	Properties          map[string]string
	AdminACL, SubmitACL string
	ChildTemplate       struct {
		MaxApplications uint64
		Properties      map[string]string
		Resources       ykResources
	}
	Queues []ykQueue
	Limits []ykLimit
}

type ykResources struct{ Guaranteed, Max map[string]string }

type ykRule struct {
	Name   string
	Create bool
	Filter struct {
		Type          string
		Users, Groups []string
	}
	Parent *ykRule
	Value  string
}

type ykLimit struct {
	Limit           string
	Users, Groups   []string
	MaxResources    map[string]string
	MaxApplications uint64
}

// usherKeys are usher's own partition keys, which usher.yaml holds.
var usherKeys = map[string]bool{"adminacl": true, "applicationacls": true, "defaultqueue": true, "groups": true, "usergroupresolver": true}

// yunikornCheck reports what of n makes YuniKorn's scheduler refuse the whole
// file: a key its strict decoder does not know, or a value it cannot decode
// into t. at is the mapping n is in: "", "partition", or the key above.
func (p *parser) yunikornCheck(n *yaml.Node, t reflect.Type, at string) {
	switch {
	case n.Line >= usherLine || p.reported[n]: // usher.yaml's; reported
	case t.Kind() == reflect.Pointer:
		p.yunikornCheck(n, t.Elem(), at)
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			switch {
			case k.Line >= usherLine:
			case ok && t == reflect.TypeFor[ykConfig]() && k.Value == "partitions":
				p.yunikornCheck(v, ft, "partition")
			case ok:
				p.yunikornCheck(v, ft, k.Value)
			default:
				p.upgrade(k, "YuniKorn's scheduler does not know the key %q here and refuses the whole file: %s", k.Value, usherHome(at, k.Value))
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for _, c := range n.Content {
			p.yunikornCheck(c, t.Elem(), at)
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			p.yunikornCheck(n.Content[i], t.Elem(), at)
		}
	case t.Kind() == reflect.String && n.Kind == yaml.ScalarNode && n.Style&yaml.TaggedStyle == 0:
		// Any untagged scalar decodes into a string.
	default:
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			p.upgrade(n, "YuniKorn's scheduler refuses the whole file: %s", decodeMsg(n, err))
		}
	}
}

// usherHome says where a key YuniKorn does not know, found in the mapping at, belongs.
func usherHome(at, key string) string {
	switch {
	case at == "" && key == "admissionController":
		return "write the admission settings as the ConfigMap's admissionController.* keys, or in its " + UsherKey + " key"
	case at == "partition" && key == "statedumpfilepath":
		return "YuniKorn 1.5 removed it and usher does not read it: delete it"
	case at == "partition" && usherKeys[key]:
		return "usher's setting belongs in the ConfigMap's " + UsherKey + " key, under the partition's name (usher split moves it; docs/yunikorn.md)"
	case at == "usergroupresolver":
		return "move usergroupresolver into the ConfigMap's " + UsherKey + " key, under the partition's name (usher split moves it; docs/yunikorn.md)"
	}
	return "remove it"
}

// tagged reports a value usher reads (as text, what) tagged other than
// !!str, which YuniKorn's YAML decoder reads otherwise, or refuses.
func (p *parser) tagged(n *yaml.Node, what, text string) {
	p.reported[n] = true
	var yk string
	err := n.Decode(&yk)
	reads := fmt.Sprintf("reads %q", yk)
	if err != nil {
		reads = "refuses the whole file (" + decodeMsg(n, err) + ")"
	}
	p.upgrade(n, "%s is tagged %s: usher reads the text %q, YuniKorn's YAML decoder %s; write the value without the tag", what, n.Tag, text, reads)
}

// mergeUsher adds a ConfigMap's usher.yaml (text) to the partitions document
// root, each partition's keys to the partition of the same name.
func (p *parser) mergeUsher(root *yaml.Node, text string) {
	doc := new(yaml.Node)
	if err := yaml.Unmarshal([]byte(text), doc); err != nil {
		p.yamlError(err, usherLine)
		return
	}
	shiftLines(doc)
	if len(doc.Content) == 0 {
		return
	}
	parts := yamlnode.Value(root, "partitions")
	p.mapping(doc.Content[0], UsherKey, map[string]func(k, v *yaml.Node){
		"admissionController": func(k, v *yaml.Node) { p.mergeKey(root, k, v) },
		"partitions": func(k, v *yaml.Node) {
			if v.Kind != yaml.SequenceNode || parts == nil || parts.Kind != yaml.SequenceNode {
				p.errorf(v, "%s: partitions must be a list, merged into the partitions document's list", UsherKey)
				return
			}
			for _, un := range v.Content {
				if un.Kind != yaml.MappingNode {
					p.errorf(un, "%s: a partition must be a mapping, not %s", UsherKey, yamlnode.Kind(un))
					continue
				}
				name := partitionName(un)
				var into *yaml.Node
				for _, pn := range parts.Content {
					if pn.Kind == yaml.MappingNode && strings.EqualFold(partitionName(pn), name) {
						into = pn
					}
				}
				if into == nil {
					p.errorf(un, "%s: partition %q is not in the partitions document", UsherKey, name)
					continue
				}
				for i := 0; i+1 < len(un.Content); i += 2 {
					if k := un.Content[i]; k.Value != "name" {
						p.mergeKey(into, k, un.Content[i+1])
					}
				}
			}
		},
	})
}

// mergeKey adds the key k of usher.yaml, with its value v, to into.
func (p *parser) mergeKey(into, k, v *yaml.Node) {
	if k.Value != "admissionController" && !usherKeys[k.Value] {
		p.errorf(k, "%s: %q belongs in the partitions document, which YuniKorn reads; %s holds usher's own keys (admissionController, and a partition's adminacl, applicationacls, defaultqueue, groups and usergroupresolver)", UsherKey, k.Value, UsherKey)
		return
	}
	for i := 0; i < len(into.Content); i += 2 {
		if into.Content[i].Value == k.Value {
			p.errorf(k, "%s: %s is set both here and in the partitions document (line %d): set it in one", UsherKey, k.Value, docLine(into.Content[i].Line))
			return
		}
	}
	into.Content = append(into.Content, k, v)
}

// partitionName is the name of partition mapping n, as YuniKorn's validator names it.
func partitionName(n *yaml.Node) string {
	if name := yamlnode.Value(n, "name"); name != nil && name.Value != "" {
		return name.Value
	}
	return "default"
}

// shiftLines adds usherLine to the line of every node of the tree n.
func shiftLines(n *yaml.Node) {
	n.Line += usherLine
	for _, c := range n.Content {
		shiftLines(c)
	}
}

// missingGroup reports that service.policyGroup names a key the ConfigMap
// lacks: an error while queue or delete ACLs are enforced, else a warning.
func (p *parser) missingGroup(c *Config, src *source) {
	c.MissingGroup = src.missing
	sev, then := Warning, "so does usher"
	if a := c.Admission; a != nil && (a.Config().EnforceQueueACLs || a.Config().EnforceDeleteACLs) {
		sev, then = Error, "usher refuses it while enforceQueueACLs or enforceDeleteACLs is on"
	}
	locator{p: p, cm: src}.at(PolicyGroupKey, Diagnostic{Severity: sev, Code: "policy-group", Msg: fmt.Sprintf(
		"%s is %q, but the ConfigMap has no %s.yaml key: YuniKorn's scheduler serves its default configuration, where everyone may submit to every queue, and %s",
		PolicyGroupKey, src.missing, src.missing, then)}, -1, "")
}

// Split returns the data of a ConfigMap holding the configuration at path in
// two keys: the partitions', which YuniKorn reads, and UsherKey with what its
// strict decoder does not know (moved). One with errors or a UsherKey is not split.
func Split(path string) (data []byte, moved []string, err error) {
	f, err := Read(path)
	if err != nil {
		return nil, nil, err
	}
	if _, err := LoadFiles(f); err != nil {
		return nil, nil, err
	}
	src, err := f.source()
	switch {
	case err != nil:
		return nil, nil, err
	case src.usher != nil:
		return nil, nil, fmt.Errorf("%s: the ConfigMap has a %s key already", path, UsherKey)
	case src.missing != "":
		return nil, nil, fmt.Errorf("%s: the ConfigMap has no %s.yaml key, which %s names", path, src.missing, PolicyGroupKey)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src.queues, &doc); err != nil {
		return nil, nil, err
	}
	root, usher := doc.Content[0], &yaml.Node{Kind: yaml.MappingNode}
	var parts []*yaml.Node
	kept := root.Content[:0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "admissionController":
			usher.Content = append(usher.Content, k, v)
			moved = append(moved, k.Value)
			continue
		case "partitions":
			for _, pn := range v.Content {
				if up, keys := splitPartition(pn); up != nil {
					parts = append(parts, up)
					moved = append(moved, fmt.Sprintf("partition %s: %s", partitionName(pn), strings.Join(keys, ", ")))
				}
			}
		}
		kept = append(kept, k, v)
	}
	root.Content = kept
	if parts != nil {
		usher.Content = append(usher.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "partitions"}, &yaml.Node{Kind: yaml.SequenceNode, Content: parts})
	}
	out := &yaml.Node{Kind: yaml.MappingNode}
	add := func(key string, text []byte) {
		out.Content = append(out.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.LiteralStyle, Value: string(text)})
	}
	if moved == nil {
		add(queuesKey(src.keys), src.queues)
	} else {
		add(queuesKey(src.keys), yamlnode.Encode(&doc))
		add(UsherKey, yamlnode.Encode(usher))
	}
	return yamlnode.Encode(out), moved, nil
}

// splitPartition moves usher's own keys of partition pn into a mapping
// of the same name, listing them; nil when there are none.
func splitPartition(pn *yaml.Node) (*yaml.Node, []string) {
	var keys []string
	up := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: "name"}, {Kind: yaml.ScalarNode, Value: partitionName(pn)}}}
	kept := pn.Content[:0]
	for i := 0; i+1 < len(pn.Content); i += 2 {
		k, v := pn.Content[i], pn.Content[i+1]
		if usherKeys[k.Value] && (k.Value != "usergroupresolver" || len(v.Content) != 2 || v.Content[0].Value != "type") {
			up.Content = append(up.Content, k, v)
			keys = append(keys, k.Value)
			continue
		}
		kept = append(kept, k, v)
	}
	pn.Content = kept
	if keys == nil {
		return nil, nil
	}
	return up, keys
}
