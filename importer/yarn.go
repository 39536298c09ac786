package importer

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/policy"
)

// YARNFiles are the files of a YARN cluster to import. Exactly one of
// FairScheduler and CapacityScheduler is required; YARNSite is optional.
type YARNFiles struct {
	FairScheduler     *Source
	CapacityScheduler *Source
	YARNSite          *Source
	// Partition names the partition written ("" is "default").
	Partition string
}

// Defaults that the import applies, as comments in the YAML.
const (
	fromRootDefault  = "YARN's default for the root queue when the ACL is not set"
	fromAdminDefault = `Hadoop's default yarn.admin.acl "*" (yarn.admin.acl not set)`
)

// YARN imports a YARN cluster's queue hierarchy and ACLs. The error, when
// not nil, is a *config.InvalidError listing every problem as FILE:LINE:COL;
// the returned Config carries the warnings.
func YARN(f YARNFiles) (*Config, error) {
	var d diags
	c := &Config{Partition: f.Partition}
	var rootAt pos
	switch {
	case f.FairScheduler != nil && f.CapacityScheduler != nil:
		return nil, errors.New("import: give one scheduler file, fair-scheduler.xml or capacity-scheduler.xml, not both")
	case f.FairScheduler != nil:
		c.Sources = append(c.Sources, f.FairScheduler.Name)
		var top *element
		c.Root, rootAt, top = fairScheduler(*f.FairScheduler, &d)
		if c.Root != nil {
			c.Placement = fairPlacement(top, c.Root, &d)
			fairDefaults(top, c.Root, &d)
		}
	case f.CapacityScheduler != nil:
		c.Sources = append(c.Sources, f.CapacityScheduler.Name)
		var props *properties
		c.Root, rootAt, props = capacityScheduler(*f.CapacityScheduler, &d)
		if c.Root != nil {
			c.Placement = capacityPlacement(props, c.Root, &d)
		}
	default:
		return nil, errors.New("import: a scheduler file is needed: fair-scheduler.xml or capacity-scheduler.xml")
	}
	if c.Root != nil {
		rootDefaults(c.Root, rootAt, &d)
		fit(c.Root, policy.RootQueue, nil, count{}, &d)
		fitUsers(c.Root, &d)
	}
	if f.YARNSite != nil {
		c.Sources = append(c.Sources, f.YARNSite.Name)
		yarnSite(*f.YARNSite, c, f.FairScheduler != nil, &d)
	} else {
		d.warnf(pos{file: c.Sources[0]}, "no yarn-site.xml given: assuming yarn.acl.enable=true and no cluster admin ACL (yarn.admin.acl); "+
			`Hadoop's defaults are yarn.acl.enable=false (no ACL checked) and yarn.admin.acl "*": import yarn-site.xml too to follow the cluster`)
	}
	c.Warnings = d.of(config.Warning)
	if err := d.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// rootDefaults applies YARN's default to the root queue's unset ACLs:
// "*", so everyone may submit to and administer (kill in) every queue.
func rootDefaults(root *Queue, at pos, d *diags) {
	if root.Submit == nil {
		root.Submit = &Setting{ACL: acl.MustParse("*"), From: fromRootDefault}
		d.warnf(at, `the root queue sets no submit ACL: YARN's default "*" lets everyone submit to every queue; imported as submitacl "*" (set it to " " in YARN, or here, to restrict)`)
	}
	if root.Admin == nil {
		root.Admin = &Setting{ACL: acl.MustParse("*"), From: fromRootDefault}
		d.warnf(at, `the root queue sets no administer ACL: YARN's default "*" lets everyone administer every queue and kill any application; imported as adminacl "*" (set it to " " in YARN, or here, to restrict)`)
	}
}

// yarnQueueName is narrower than policy.ValidQueueName: YARN's mappings
// and ACLs read ':', '#', '/' and '@' specially.
var yarnQueueName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// queueName checks a YARN queue name for usher; path is the parent's.
func queueName(name, parent string, at pos, d *diags) (string, bool) {
	if !yarnQueueName.MatchString(name) {
		d.errorf(at, "queue %q under %s: the YARN importer takes queue names of 1 to 64 letters, digits, '_' or '-' "+
			"(usher's YAML schema, as YuniKorn's, also allows ':', '#', '/' and '@'; the importer keeps the narrower set); rename it in YARN or in the imported file", name, parent)
		return "", false
	}
	return parent + "." + strings.ToLower(name), true
}

// fairScheduler reads a fair-scheduler.xml: nested <queue> (or <pool>)
// elements with <aclSubmitApps> and <aclAdministerApps>; without a
// top-level root, the top-level queues are root's children.
func fairScheduler(src Source, d *diags) (*Queue, pos, *element) {
	top := parseXML(src, d, "fair-scheduler.xml", "allocations")
	if top == nil {
		return nil, pos{}, nil
	}
	var queues []*element
	var explicitRoot *element
	for _, e := range top.kids {
		if e.name != "queue" && e.name != "pool" {
			continue
		}
		queues = append(queues, e)
		if n, _ := e.attr("name"); strings.EqualFold(strings.TrimSpace(n), policy.RootQueue) {
			explicitRoot = e
		}
	}
	root := &Queue{Name: policy.RootQueue}
	if explicitRoot != nil {
		if len(queues) > 1 {
			d.errorf(explicitRoot.at, "the root queue is configured, so every other queue must be inside it (YARN refuses this file)")
			return nil, pos{}, nil
		}
		fairQueueBody(explicitRoot, root, policy.RootQueue, d)
		return root, explicitRoot.at, top
	}
	fairChildren(queues, root, policy.RootQueue, d)
	return root, pos{file: src.Name}, top
}

func fairChildren(elems []*element, parent *Queue, parentPath string, d *diags) {
	seen := map[string]pos{}
	for _, e := range elems {
		raw, ok := e.attr("name")
		name := strings.TrimSpace(raw)
		switch {
		case !ok || name == "":
			d.errorf(e.at, "a <%s> under %s has no name (YARN refuses this file)", e.name, parentPath)
			continue
		case strings.Contains(name, "."):
			d.errorf(e.at, "queue name %q under %s contains a period (YARN refuses this file)", name, parentPath)
			continue
		}
		path, ok := queueName(name, parentPath, e.at, d)
		if !ok {
			continue
		}
		if prev, dup := seen[path]; dup {
			d.errorf(e.at, "queue %s is defined twice (first at line %d; usher queue names are not case sensitive)", path, prev.line)
			continue
		}
		seen[path] = e.at
		q := &Queue{Name: name}
		if t, _ := e.attr("type"); strings.EqualFold(strings.TrimSpace(t), "parent") {
			q.Parent = true // a parent queue without children, for placement
		}
		fairQueueBody(e, q, path, d)
		parent.Children = append(parent.Children, q)
	}
}

func fairQueueBody(e *element, q *Queue, path string, d *diags) {
	var kids []*element
	var sched *element
	for _, f := range e.kids {
		what := fmt.Sprintf("queue %s: %s", path, f.name)
		switch f.name {
		case "queue", "pool":
			kids = append(kids, f)
		case "aclSubmitApps":
			q.Submit = fairACL(f, q.Submit, path, d)
		case "aclAdministerApps":
			q.Admin = fairACL(f, q.Admin, path, d)
		case "aclSubmitReservations", "aclAdministerReservations", "aclListReservations", "reservation":
			d.warnf(f.at, "queue %s: <%s> is not imported: usher has no reservations", path, f.name)
		case "minResources", "maxResources", "maxChildResources":
			r, ok := fairResources(f.text, f.textAt, what, d)
			set := resources{r, f.textAt, fmt.Sprintf("%s (%s)", f.name, f.textAt)}
			switch {
			case !ok:
			case path == policy.RootQueue && f.name != "maxChildResources":
				d.warnf(f.at, "%s is not imported: YuniKorn's root queue takes no resources (its max is the cluster's)", what)
			case f.name == "minResources":
				maps.DeleteFunc(r, func(_ string, v int64) bool { return v == 0 })
				q.guaranteed = set
			case f.name == "maxResources":
				zeroMax(r, f.textAt, what, d)
				q.max = set
			default:
				zeroMax(r, f.textAt, what, d)
				q.childMax = set
			}
		case "maxRunningApps":
			q.maxApps = readCount(f.text, f.textAt, what, d)
		case "schedulingPolicy", "schedulingMode":
			sched = f
		case "allowPreemptionFrom":
			if !strings.EqualFold(strings.TrimSpace(f.text), "true") { // Boolean.parseBoolean
				q.props = append(q.props, prop{"preemption.policy", "disabled", f.textAt.String()})
			}
		default:
			d.warnf(f.at, "%s is not imported: %s", what, noEquivalent(f.name))
		}
	}
	if sched != nil {
		v := strings.ToLower(strings.TrimSpace(sched.text))
		q.sortPolicy(len(kids) == 0 && !q.Parent, v, "fair", path+": schedulingPolicy", sched.text, sched.textAt, d)
	}
	fairChildren(kids, q, path, d)
}

// sortPolicy imports the order of a queue, read as v from text: fifo or fair
// on a leaf; between queues YuniKorn shares fairly, as shared does.
func (q *Queue) sortPolicy(leaf bool, v, shared, what, text string, at pos, d *diags) {
	switch {
	case leaf && (v == "fifo" || v == "fair"):
		q.props = append(q.props, prop{"application.sort.policy", v, at.String()})
	case leaf || v != shared:
		d.warnf(at, "queue %s %q is not imported: YuniKorn orders a leaf queue's applications fifo or fair (application.sort.policy) and shares fairly between queues", what, text)
	}
}

// zeroMax warns about a max that allows none of a resource: YuniKorn runs
// no pod that asks for it in the queue. A max of zeros only, which
// YuniKorn ignores, is not written.
func zeroMax(r res, at pos, what string, d *diags) {
	if len(r) > 0 && !slices.ContainsFunc(slices.Collect(maps.Values(r)), func(v int64) bool { return v != 0 }) {
		d.warnf(at, "%s allows nothing, which YuniKorn reads as no limit: not written; remove the queue's submitacl to stop submissions", what)
		clear(r)
	}
	for _, k := range slices.Sorted(maps.Keys(r)) {
		if r[k] == 0 {
			d.warnf(at, "%s allows no %s: YuniKorn runs no pod that asks for %s in this queue; delete it from the max written if that is not meant", what, k, k)
		}
	}
}

// noEquivalent says why a YARN setting is not imported.
func noEquivalent(setting string) string {
	switch {
	case strings.Contains(setting, "weight"):
		return "YuniKorn has no queue weights; it shares by guaranteed resources"
	case strings.Contains(setting, "AMShare") || strings.Contains(setting, "am-resource"):
		return "YuniKorn does not limit application masters apart"
	case strings.Contains(strings.ToLower(setting), "preemption"):
		return "YuniKorn preempts to give queues their guaranteed resources, after the queue property preemption.delay"
	case strings.Contains(setting, "user-limit"):
		return "YuniKorn's user limits are absolute: add limits with maxresources by hand"
	case setting == "maximum-applications":
		return "YARN rejects submissions past it, running or pending; YuniKorn has no such limit (its maxapplications is YARN's max-parallel-apps)"
	}
	return "YuniKorn has no such setting"
}

// fairDefaults reads the fair-scheduler.xml settings for every queue or
// user; the default scheduling policy (fair unless set; YuniKorn's is
// fifo) becomes root's application.sort.policy.
func fairDefaults(top *element, root *Queue, d *diags) {
	sortPolicy := prop{"application.sort.policy", "fair", "the Fair Scheduler's default schedulingPolicy (YuniKorn's default is fifo)"}
	for _, e := range top.kids {
		switch e.name {
		case "queue", "pool", "queuePlacementPolicy":
		case "user":
			name, _ := e.attr("name")
			for _, f := range e.kids {
				if f.name == "maxRunningApps" {
					addUser(root, name, fmt.Sprintf("user %s: maxRunningApps", name), f.text, f.textAt, d)
				}
			}
		case "userMaxAppsDefault":
			addUser(root, "*", "userMaxAppsDefault", e.text, e.textAt, d)
		case "queueMaxAppsDefault":
			defaultMaxApps(root, e.name, e.text, e.textAt, d)
		case "queueMaxResourcesDefault":
			if r, ok := fairResources(e.text, e.textAt, e.name, d); ok {
				zeroMax(r, e.textAt, e.name, d)
				each(root, policy.RootQueue, func(q *Queue, path string) {
					if q.max.q == nil && path != policy.RootQueue {
						q.max = resources{maps.Clone(r), e.textAt, fmt.Sprintf("%s (%s)", e.name, e.textAt)}
					}
				})
			}
		case "defaultQueueSchedulingPolicy", "defaultQueueSchedulingMode":
			switch v := strings.ToLower(strings.TrimSpace(e.text)); v {
			case "fifo":
				d.errorf(e.textAt, "%s cannot be fifo (YARN fails to load it)", e.name)
			case "fair":
				sortPolicy.from = e.textAt.String()
			default:
				d.warnf(e.textAt, "%s %q is not imported: YuniKorn orders applications fifo or fair (application.sort.policy); fair is written", e.name, e.text)
			}
		default:
			d.warnf(e.at, "<%s> is not imported: %s", e.name, noEquivalent(e.name))
		}
	}
	root.props = append([]prop{sortPolicy}, root.props...)
}

func fairACL(f *element, prev *Setting, path string, d *diags) *Setting {
	what := fmt.Sprintf("queue %s: %s", path, f.name)
	if prev != nil {
		d.warnf(f.at, "%s is set twice (first at %s); the later one is used, as YARN does", what, prev.From)
	}
	if !f.hasText {
		d.errorf(f.at, `%s is empty, which YARN fails to load: write "*" for everyone or " " (one space) for nobody`, what)
		return prev
	}
	if s := d.yarnACL(f.text, f.textAt, what); s != nil {
		return s
	}
	return prev
}

// Capacity Scheduler property names.
const (
	csPrefix    = "yarn.scheduler.capacity."
	csQueues    = ".queues"
	csSubmitACL = ".acl_submit_applications"
	csAdminACL  = ".acl_administer_queue"
)

// capacityScheduler reads a capacity-scheduler.xml: the hierarchy from
// the .queues properties starting at root, each queue's ACLs and limits.
func capacityScheduler(src Source, d *diags) (*Queue, pos, *properties) {
	props := readConfiguration(src, d, "capacity-scheduler.xml")
	if props == nil {
		return nil, pos{}, nil
	}
	rootQueues := props.get(csPrefix + "root" + csQueues)
	if rootQueues == nil {
		d.errorf(pos{file: src.Name}, "no %sroot%s property: a capacity-scheduler.xml lists the root queue's children there", csPrefix, csQueues)
		return nil, pos{}, nil
	}
	known := map[string]bool{}
	var build func(name, yarnPath, path string) *Queue
	build = func(name, yarnPath, path string) *Queue {
		known[yarnPath] = true
		q := &Queue{Name: name}
		q.Submit = capacityACL(props.get(csPrefix+yarnPath+csSubmitACL), path, "acl_submit_applications", d)
		q.Admin = capacityACL(props.get(csPrefix+yarnPath+csAdminACL), path, "acl_administer_queue", d)
		if list := props.get(csPrefix + yarnPath + csQueues); list != nil {
			seen := map[string]bool{}
			list.items(func(child string, at pos) {
				childPath, ok := queueName(child, path, at, d)
				if !ok {
					return
				}
				if seen[childPath] {
					d.errorf(at, "queue %s is listed twice in %s (usher queue names are not case sensitive)", childPath, list.name)
					return
				}
				seen[childPath] = true
				q.Children = append(q.Children, build(child, yarnPath+"."+child, childPath))
			})
		}
		capacityLimits(props, yarnPath, path, q, d)
		return q
	}
	root := build(policy.RootQueue, "root", policy.RootQueue)
	for _, p := range props.order {
		rest, ok := strings.CutPrefix(p.name, csPrefix)
		if !ok {
			continue
		}
		path, key := "", ""
		for i := len(rest); i > 0; i = strings.LastIndexByte(rest[:i], '.') {
			if i < len(rest) && known[rest[:i]] {
				path, key = rest[:i], rest[i+1:]
				break
			}
		}
		last := key[strings.LastIndexByte(key, '.')+1:]
		switch {
		case path == "":
			capacityGlobal(p, rest, root, d)
		case strings.Contains(key, ".") && (csRead[last] || strings.HasPrefix(last, "acl_")) && !strings.HasPrefix(key, "accessible-node-labels.") && !strings.HasPrefix(key, "leaf-queue-template."):
			path = rest[:len(rest)-len(last)-1]
			d.warnf(p.at, "%s is ignored: queue %s is not in the hierarchy (no %s%s lists it)", p.name, path, csPrefix, path[:strings.LastIndexByte(path, '.')]+csQueues)
		case csRead[key]:
		case key == "state":
			if !strings.EqualFold(strings.TrimSpace(p.value), "RUNNING") {
				d.warnf(p.valueAt, "%s %q is not imported: YuniKorn queues cannot be stopped; remove the queue's submitacl to stop submissions", p.name, p.value)
			}
		case strings.HasSuffix(key, "_reservations"):
			d.warnf(p.at, "%s is not imported: usher has no reservations", p.name)
		case strings.HasPrefix(key, "acl_"):
			d.warnf(p.at, "%s is not imported: the Capacity Scheduler's queue ACLs are acl_submit_applications and acl_administer_queue", p.name)
		default:
			d.warnf(p.at, "%s is not imported: %s", p.name, noEquivalent(key))
		}
	}
	return root, rootQueues.at, props
}

// csRead are the queue properties capacityScheduler reads.
var csRead = map[string]bool{"queues": true, "acl_submit_applications": true, "acl_administer_queue": true, "capacity": true, "maximum-capacity": true,
	"max-parallel-apps": true, "ordering-policy": true, "disable_preemption": true, "auto-create-child-queue.enabled": true}

// capacityLimits reads a Capacity Scheduler queue's limits.
func capacityLimits(props *properties, yarnPath, path string, q *Queue, d *diags) {
	get := func(key string) *property { return props.get(csPrefix + yarnPath + "." + key) }
	for _, t := range []struct {
		key string
		r   *resources
	}{{"capacity", &q.guaranteed}, {"maximum-capacity", &q.max}} {
		p := get(t.key)
		if p == nil {
			continue
		}
		r, ok := capacityResources(p, path, t.key, d)
		switch {
		case ok && path == policy.RootQueue:
			d.warnf(p.valueAt, "queue root: %s is not imported: YuniKorn's root queue takes no resources (its max is the cluster's)", t.key)
		case ok:
			if t.key == "capacity" {
				maps.DeleteFunc(r, func(_ string, v int64) bool { return v == 0 })
			} else {
				zeroMax(r, p.valueAt, "queue "+path+": maximum-capacity", d)
			}
			*t.r = resources{r, p.valueAt, fmt.Sprintf("%s (%s)", t.key, p.valueAt)}
		}
	}
	if p := get("max-parallel-apps"); p != nil {
		q.maxApps = readCount(p.value, p.valueAt, fmt.Sprintf("queue %s: max-parallel-apps", path), d)
	}
	if p := get("ordering-policy"); p != nil {
		q.sortPolicy(len(q.Children) == 0, strings.TrimSpace(p.value), "utilization", path+": ordering-policy", p.value, p.valueAt, d)
	}
	if p := get("disable_preemption"); p.isTrue() {
		q.props = append(q.props, prop{"preemption.policy", "disabled", p.valueAt.String()})
	}
}

// capacityGlobal reads a Capacity Scheduler setting outside the queues.
func capacityGlobal(p *property, key string, root *Queue, d *diags) {
	switch {
	case key == "max-parallel-apps":
		defaultMaxApps(root, p.name, p.value, p.valueAt, d)
	case key == "user.max-parallel-apps":
		addUser(root, "*", p.name, p.value, p.valueAt, d)
	case strings.HasPrefix(key, "user.") && strings.HasSuffix(key, ".max-parallel-apps"):
		addUser(root, key[len("user."):len(key)-len(".max-parallel-apps")], p.name, p.value, p.valueAt, d)
	case key == "maximum-applications", key == "maximum-am-resource-percent", key == "user-limit-factor", key == "minimum-user-limit-percent":
		d.warnf(p.at, "%s is not imported: %s", p.name, noEquivalent(key))
	}
}

func capacityACL(p *property, path, key string, d *diags) *Setting {
	if p == nil {
		return nil
	}
	return d.yarnACL(p.value, p.valueAt, fmt.Sprintf("queue %s: %s", path, key))
}

// yarnSite reads yarn.acl.enable, yarn.admin.acl and
// yarn.resourcemanager.scheduler.class from yarn-site.xml.
func yarnSite(src Source, c *Config, fair bool, d *diags) {
	props := readConfiguration(src, d, "yarn-site.xml")
	if props == nil {
		return
	}
	enabled, invalid := false, false
	if p := props.get("yarn.acl.enable"); p == nil {
		d.warnf(pos{file: src.Name}, "yarn.acl.enable is not set: Hadoop's default is false, so YARN checks no ACL at all and everyone may submit, administer and kill everywhere")
	} else {
		switch v := strings.TrimSpace(p.value); {
		case strings.EqualFold(v, "true"):
			enabled = true
		case strings.EqualFold(v, "false"):
			d.warnf(p.valueAt, "yarn.acl.enable is false: YARN checks no ACL at all and everyone may submit, administer and kill everywhere")
		default:
			invalid = true
			d.errorf(p.valueAt, "yarn.acl.enable %q: want true or false (Hadoop would read it as false and check no ACL)", p.value)
		}
	}
	if p := props.get("yarn.admin.acl"); p == nil {
		c.AdminACL = &Setting{ACL: acl.MustParse("*"), From: fromAdminDefault}
		d.warnf(pos{file: src.Name}, `yarn.admin.acl is not set: Hadoop's default "*" makes every user a cluster admin, who may submit to, administer and kill in every queue; imported as adminacl "*" (set yarn.admin.acl, or the adminacl here, to restrict)`)
	} else if s := d.yarnACL(p.value, p.valueAt, "yarn.admin.acl"); s != nil {
		s.From = "yarn.admin.acl (" + s.From + ")"
		c.AdminACL = s
	}
	if p := props.get("yarn.resourcemanager.scheduler.class"); p != nil {
		class := strings.TrimSpace(p.value)
		switch {
		case fair && strings.Contains(class, "CapacityScheduler"):
			d.warnf(p.valueAt, "the cluster runs the Capacity Scheduler (%s) but a fair-scheduler.xml was imported", class)
		case !fair && strings.Contains(class, "FairScheduler"):
			d.warnf(p.valueAt, "the cluster runs the Fair Scheduler (%s) but a capacity-scheduler.xml was imported", class)
		}
	}
	if !enabled && !invalid && c.Root != nil {
		from := "yarn.acl.enable is false or not set: YARN checks no ACL"
		for _, r := range []struct {
			name string
			s    **Setting
		}{{"submitacl", &c.Root.Submit}, {"adminacl", &c.Root.Admin}} {
			if s := *r.s; s != nil && !s.ACL.All() {
				d.warnf(pos{file: src.Name}, "the root queue's %s %q (%s) is replaced by \"*\" because YARN checks no ACL; set yarn.acl.enable=true in YARN and remove the \"*\" here to enforce the imported ACLs", r.name, s.ACL.String(), s.From)
			}
			*r.s = &Setting{ACL: acl.MustParse("*"), From: from}
		}
	}
}
