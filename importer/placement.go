package importer

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// This file translates YARN's <queuePlacementPolicy> and queue-mappings
// into YuniKorn's placement rules; what has no equivalent is a warning.

// Rule is an imported placement rule with where it came from.
type Rule struct {
	Spec placement.Spec
	From string // the comment above the rule: FILE:LINE and the YARN rule
}

// fallThroughWarning is said once per import that writes rules.
const fallThroughWarning = "placement rules are imported; one difference applies to all of them: YARN checks the submit ACL " +
	"of the queue placement chose and rejects the application when it is denied there, while YuniKorn (and usher) skip a rule " +
	"whose queue the user may not submit to and try the next one, then root.default"

// fairPlacement translates a fair-scheduler.xml's <queuePlacementPolicy>.
func fairPlacement(top *element, root *Queue, d *diags) []Rule {
	var policyElem *element
	for _, e := range top.kids {
		if e.name == "queuePlacementPolicy" {
			policyElem = e
		}
	}
	if policyElem == nil {
		return nil
	}
	var rules []Rule
	rejected := false
	for _, e := range policyElem.kids {
		if e.name != "rule" {
			continue
		}
		name, _ := e.attr("name")
		if rejected {
			d.warnf(e.at, "placement rule %q follows a reject rule: YARN never reaches it; not imported", name)
			continue
		}
		if name == "reject" {
			rejected = true
			if find(root, placement.DefaultQueue) != nil {
				d.warnf(e.at, "placement rule reject: YuniKorn has no reject rule; after the last rule it tries root.default, which exists here, "+
					"so applications YARN rejects run in root.default if the user may submit there: restrict root.default's submitacl, or remove the queue")
			} else {
				d.warnf(e.at, "placement rule reject: not written; YuniKorn rejects an application no rule places when root.default does not exist, as here")
			}
			continue
		}
		spec, ok := fairRule(e, name, root, false, d)
		if !ok {
			continue
		}
		rules = append(rules, Rule{Spec: spec, From: fmt.Sprintf("%s: <rule name=%q>", e.at, name)})
	}
	if len(rules) > 0 {
		markParents(rules, root, func(string) bool { return false }, d, policyElem.at)
		d.warnf(policyElem.at, "%s", fallThroughWarning)
	}
	return rules
}

// fairCreate reads a rule's create attribute (default true).
func fairCreate(e *element, d *diags) bool {
	v, ok := e.attr("create")
	switch b := strings.ToLower(strings.TrimSpace(v)); {
	case !ok || b == "true":
		return true
	case b != "false":
		d.warnf(e.at, "create=%q: want true or false; YARN reads anything else as false", v)
	}
	return false
}

// fairRule translates one rule; nested says it is the rule inside a
// nestedUserQueue, which names a parent queue.
func fairRule(e *element, name string, root *Queue, nested bool, d *diags) (placement.Spec, bool) {
	create := fairCreate(e, d)
	switch name {
	case "specified":
		d.warnf(e.at, "placement rule specified becomes provided; differences: the Fair Scheduler reads a dotted name without root. (a.b) as "+
			"the path root.a.b and a requested queue \"default\" as none, while YuniKorn makes a.b the queue root.a_dot_b and places \"default\" in root.default")
		return placement.Spec{Name: string(placement.Provided), Create: create}, true
	case "user":
		return placement.Spec{Name: string(placement.User), Create: create}, true
	case "primaryGroup":
		d.warnf(e.at, "placement rule primaryGroup is an usher extension (YuniKorn's scheduler has no such rule): the configuration is for usher, not for YuniKorn")
		return placement.Spec{Name: "primaryGroup", Create: create}, true
	case "secondaryGroupExistingQueue":
		d.warnf(e.at, "placement rule secondaryGroupExistingQueue becomes the usher extension secondaryGroup (YuniKorn's scheduler has no such rule): the configuration is for usher, not for YuniKorn")
		return placement.Spec{Name: "secondaryGroup"}, true
	case "default":
		q, _ := e.attr("queue")
		q = qualify(cmp.Or(strings.TrimSpace(q), placement.DefaultQueue))
		if f := find(root, q); !nested && f != nil && (len(f.Children) > 0 || f.Parent) {
			d.warnf(e.at, "placement rule default names the parent queue %s, where YARN places no application: not imported", q)
			return placement.Spec{}, false
		}
		d.warnf(e.at, "placement rule default becomes fixed %s: YARN stops at its default rule, YuniKorn tries root.default when the user may not submit to %s", q, q)
		return placement.Spec{Name: string(placement.Fixed), Value: q, Create: create && find(root, q) == nil}, true
	case "nestedUserQueue":
		i := slices.IndexFunc(e.kids, func(k *element) bool { return k.name == "rule" })
		if i < 0 {
			d.warnf(e.at, "placement rule nestedUserQueue without a nested <rule>: not imported (YARN refuses it)")
			return placement.Spec{}, false
		}
		inner := e.kids[i]
		innerName, _ := inner.attr("name")
		parent, ok := fairRule(inner, innerName, root, true, d)
		if !ok || innerName == "user" || innerName == "nestedUserQueue" {
			d.warnf(inner.at, "nestedUserQueue inside %q: not imported (YARN nests specified, primaryGroup, secondaryGroupExistingQueue or default)", innerName)
			return placement.Spec{}, false
		}
		return placement.Spec{Name: string(placement.User), Create: create, Parent: &parent}, true
	case "":
		d.warnf(e.at, "a placement <rule> without a name: not imported")
	default:
		d.warnf(e.at, "placement rule %q is not a Fair Scheduler rule usher knows: not imported", name)
	}
	return placement.Spec{}, false
}

// qualify puts root. in front of a queue name that lacks it, as the
// schedulers read a queue name in their configuration.
func qualify(q string) string {
	q = strings.ToLower(q)
	if q == policy.RootQueue || strings.HasPrefix(q, policy.RootQueue+".") {
		return q
	}
	return policy.RootQueue + "." + q
}

// find returns the queue at path in the imported hierarchy, nil when none.
func find(root *Queue, path string) (found *Queue) {
	each(root, policy.RootQueue, func(q *Queue, p string) {
		if p == path {
			found = q
		}
	})
	return found
}

// markParents makes each childless queue a fixed parent rule names a
// parent queue (a leaf cannot hold queues), with a warning unless
// declared says YARN treats it as a parent already.
func markParents(rules []Rule, root *Queue, declared func(path string) bool, d *diags, at pos) {
	for _, r := range rules {
		for s := &r.Spec; s != nil && s.Parent != nil; s = s.Parent {
			if s.Parent.Name != string(placement.Fixed) {
				continue
			}
			q := find(root, s.Parent.Value)
			if q == nil || len(q.Children) > 0 || q.Parent {
				continue
			}
			q.Parent = true
			if !declared(s.Parent.Value) {
				d.warnf(at, "queue %s has no child queues, but placement rule %q (from %s) makes queues inside it: imported as parent: true; in YARN the rule fails there", s.Parent.Value, r.Spec.Name, r.From)
			}
		}
	}
}

// Capacity Scheduler placement properties.
const (
	csMappings = csPrefix + "queue-mappings"
	csOverride = csPrefix + "queue-mappings-override.enable"
)

// capacityPlacement translates the Capacity Scheduler's queue-mappings;
// without override, a queue the application names comes first.
func capacityPlacement(props *properties, root *Queue, d *diags) []Rule {
	p := props.get(csMappings)
	if p == nil || strings.TrimSpace(p.value) == "" {
		return nil
	}
	override := props.get(csOverride).isTrue()
	var rules []Rule
	if !override {
		rules = append(rules, Rule{Spec: placement.Spec{Name: string(placement.Provided)},
			From: csOverride + " is false (the default): a queue the application names comes before the mappings"})
	}
	p.items(func(m string, at pos) {
		if spec, ok := capacityMapping(m, at, root, props, d); ok {
			rules = append(rules, Rule{Spec: spec, From: fmt.Sprintf("%s: %s", at, m)})
		}
	})
	if override {
		rules = append(rules, Rule{Spec: placement.Spec{Name: string(placement.Provided)},
			From: csOverride + " is true: the mappings come before a queue the application names"})
	}
	markParents(rules, root, func(path string) bool {
		return props.get(csPrefix + path + ".auto-create-child-queue.enabled").isTrue()
	}, d, p.valueAt)
	d.warnf(p.valueAt, "%s", fallThroughWarning)
	return rules
}

// groupRules are the usher extensions a mapping's group variables become.
var groupRules = map[string]string{"%primary_group": "primaryGroup", "%secondary_group": "secondaryGroup"}

func capacityMapping(m string, at pos, root *Queue, props *properties, d *diags) (placement.Spec, bool) {
	parts := strings.Split(m, ":")
	if len(parts) != 3 || (parts[0] != "u" && parts[0] != "g") {
		d.warnf(at, "queue mapping %q: not imported (usher translates u:USER:QUEUE and g:GROUP:QUEUE)", m)
		return placement.Spec{}, false
	}
	kind, who, target := parts[0], strings.TrimSpace(parts[1]), strings.TrimSpace(parts[2])
	var filter placement.FilterSpec
	switch {
	case kind == "u" && who == "%user":
	case kind == "u":
		filter = placement.FilterSpec{Type: "allow", Users: []string{who}}
	case strings.HasPrefix(who, "%"):
		d.warnf(at, "queue mapping %q: not imported (a group mapping names a group)", m)
		return placement.Spec{}, false
	default:
		filter = placement.FilterSpec{Type: "allow", Groups: []string{who}}
	}
	var spec placement.Spec
	parent, leaf := "", target
	if i := strings.LastIndexByte(target, '.'); i >= 0 {
		parent, leaf = target[:i], target[i+1:]
	}
	switch rule, group := groupRules[leaf]; {
	case leaf == "%user":
		spec = placement.Spec{Name: string(placement.User)}
	case group:
		spec = placement.Spec{Name: rule}
		d.warnf(at, "queue mapping %q becomes the usher extension %s (YuniKorn's scheduler has no such rule)", m, rule)
	default:
		if strings.HasPrefix(leaf, "%") {
			d.warnf(at, "queue mapping %q: %s is not translated; not imported", m, leaf)
			return placement.Spec{}, false
		}
		return placement.Spec{Name: string(placement.Fixed), Value: capacityQueue(target, at, root, d), Filter: filter}, true
	}
	spec.Filter = filter
	switch rule, group := groupRules[parent]; {
	case parent == "":
	case group:
		spec.Parent = &placement.Spec{Name: rule}
		d.warnf(at, "queue mapping %q: the parent %s is the usher extension %s", m, parent, rule)
	default:
		if strings.Contains(parent, "%") {
			d.warnf(at, "queue mapping %q: the parent %s is not translated; not imported", m, parent)
			return placement.Spec{}, false
		}
		pq := capacityQueue(parent, at, root, d)
		spec.Parent = &placement.Spec{Name: string(placement.Fixed), Value: pq}
		// A leaf queue made on demand needs the parent's auto-creation.
		spec.Create = props.get(csPrefix + pq + ".auto-create-child-queue.enabled").isTrue()
	}
	return spec, true
}

// capacityQueue resolves a queue of a mapping: a full path as it is, a
// leaf name to the one queue of that name.
func capacityQueue(q string, at pos, root *Queue, d *diags) string {
	if strings.Contains(q, ".") {
		return qualify(q)
	}
	// The Capacity Scheduler names queues in mappings by their leaf name,
	// unique in older versions.
	var paths []string
	each(root, policy.RootQueue, func(c *Queue, p string) {
		if p != policy.RootQueue && strings.EqualFold(c.Name, q) {
			paths = append(paths, p)
		}
	})
	switch len(paths) {
	case 1:
		return paths[0]
	case 0:
		d.warnf(at, "queue %q of a mapping is not in the hierarchy: imported as %s", q, qualify(q))
	default:
		d.warnf(at, "queue %q of a mapping names %d queues (%s): imported as %s, check it", q, len(paths), strings.Join(paths, ", "), paths[0])
		return paths[0]
	}
	return qualify(q)
}

// rulesNode renders the rules as the placementrules list.
func rulesNode(rules []Rule) *yaml.Node {
	list := sequence()
	for _, r := range rules {
		n := specNode(&r.Spec)
		n.HeadComment = "# from " + r.From
		list.Content = append(list.Content, n)
	}
	return list
}

func specNode(s *placement.Spec) *yaml.Node {
	var parent *yaml.Node
	if s.Parent != nil {
		parent = specNode(s.Parent)
	}
	filter := mapping("type", plain(s.Filter.Type), "users", quoted(s.Filter.Users), "groups", quoted(s.Filter.Groups))
	return mapping("name", plain(s.Name), "create", flag(s.Create), "value", plain(s.Value), "filter", filter, "parent", parent)
}

// quoted writes names as a flow list of double-quoted strings.
func quoted(names []string) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
	for _, name := range names {
		seq.Content = append(seq.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name, Style: yaml.DoubleQuotedStyle})
	}
	return seq
}
