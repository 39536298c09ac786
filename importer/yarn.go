package importer

import (
	"errors"
	"fmt"
	"regexp"
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

// yarnQueueName is the importer's own rule for queue names, narrower than
// YuniKorn's policy.ValidQueueName that the YAML schema uses: a queue
// imported from YARN keeps to letters, digits, '_' and '-', so that a name
// with ':', '#', '/' or '@' (which YARN's queue-mappings and ACL syntax
// read specially) is looked at by a person rather than carried over.
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

// fairScheduler reads a fair-scheduler.xml allocation file: <allocations>
// holding nested <queue name="..."> (or <pool>) elements with
// <aclSubmitApps> and <aclAdministerApps>. A top-level queue named root
// holds all the others; without one, the top-level queues are root's
// children, as the Fair Scheduler reads them.
func fairScheduler(src Source, d *diags) (*Queue, pos, *element) {
	top := parseXML(src, d)
	if top == nil {
		return nil, pos{}, nil
	}
	if top.name != "allocations" {
		hint := ""
		if top.name == "configuration" {
			hint = ": this looks like a Hadoop configuration file (capacity-scheduler.xml or yarn-site.xml)"
		}
		d.errorf(top.at, "the top element of a fair-scheduler.xml is <allocations>, not <%s>%s", top.name, hint)
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
	if explicitRoot != nil {
		if len(queues) > 1 {
			d.errorf(explicitRoot.at, "the root queue is configured, so every other queue must be inside it (YARN refuses this file)")
			return nil, pos{}, nil
		}
		root := &Queue{Name: policy.RootQueue}
		fairQueueBody(explicitRoot, root, policy.RootQueue, d)
		return root, explicitRoot.at, top
	}
	root := &Queue{Name: policy.RootQueue}
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
	for _, f := range e.kids {
		switch f.name {
		case "queue", "pool":
			kids = append(kids, f)
		case "aclSubmitApps":
			q.Submit = fairACL(f, q.Submit, path, d)
		case "aclAdministerApps":
			q.Admin = fairACL(f, q.Admin, path, d)
		case "aclSubmitReservations", "aclAdministerReservations", "aclListReservations":
			d.warnf(f.at, "queue %s: <%s> is not imported: usher has no reservations", path, f.name)
		}
	}
	fairChildren(kids, q, path, d)
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
	a, ok := d.yarnACL(f.text, f.textAt, what)
	if !ok {
		return prev
	}
	return &Setting{ACL: a, From: f.textAt.String()}
}

// Capacity Scheduler property names.
const (
	csPrefix     = "yarn.scheduler.capacity."
	csQueues     = ".queues"
	csSubmitACL  = ".acl_submit_applications"
	csAdminACL   = ".acl_administer_queue"
	csReservePfx = ".acl_" // acl_administer_reservations, acl_list_reservations, acl_submit_reservations
)

// capacityScheduler reads a capacity-scheduler.xml: the hierarchy from
// yarn.scheduler.capacity.<path>.queues starting at root, the ACLs from
// <path>.acl_submit_applications and <path>.acl_administer_queue.
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
		list := props.get(csPrefix + yarnPath + csQueues)
		if list == nil {
			return q
		}
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
		return q
	}
	root := build(policy.RootQueue, "root", policy.RootQueue)
	for _, p := range props.order {
		rest, ok := strings.CutPrefix(p.name, csPrefix)
		if !ok {
			continue
		}
		i := strings.LastIndex(rest, csReservePfx)
		if i < 0 || !strings.HasPrefix(rest, "root") {
			continue
		}
		path, key := rest[:i], rest[i+1:]
		switch {
		case !known[path]:
			d.warnf(p.at, "%s is ignored: queue %s is not in the hierarchy (no %s%s lists it)", p.name, path, csPrefix, parentOf(path)+csQueues)
		case key == "acl_submit_applications" || key == "acl_administer_queue":
		case strings.HasSuffix(key, "_reservations"):
			d.warnf(p.at, "%s is not imported: usher has no reservations", p.name)
		default:
			d.warnf(p.at, "%s is not imported: the Capacity Scheduler's queue ACLs are acl_submit_applications and acl_administer_queue", p.name)
		}
	}
	return root, rootQueues.at, props
}

func parentOf(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return path
}

func capacityACL(p *property, path, key string, d *diags) *Setting {
	if p == nil {
		return nil
	}
	a, ok := d.yarnACL(p.value, p.valueAt, fmt.Sprintf("queue %s: %s", path, key))
	if !ok {
		return nil
	}
	return &Setting{ACL: a, From: p.valueAt.String()}
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
	} else if a, ok := d.yarnACL(p.value, p.valueAt, "yarn.admin.acl"); ok {
		c.AdminACL = &Setting{ACL: a, From: "yarn.admin.acl (" + p.valueAt.String() + ")"}
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
