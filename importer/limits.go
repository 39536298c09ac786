package importer

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher/placement"
	"github.com/usherhq/usher/policy"
)

// This file carries YARN's queue limits into the keys of YuniKorn's
// queues.yaml (docs/yarn.md has the table); fit writes the values YARN
// enforces in a form YuniKorn's validator accepts.

// res holds resource quantities in YuniKorn's units: bytes of memory,
// millicores of vcore.
type res map[string]int64

// resources are a queue's guaranteed or max resources; from names the
// setting and its place, for the YAML comment and warnings.
type resources struct {
	q    res
	at   pos
	from string
}

// count is a limit of running applications; n is 0 when none is written
// (at is set when the file sets one that cannot be).
type count struct {
	n    int64
	at   pos
	from string
}

// prop is a queue property written, with where it came from.
type prop struct{ key, value, from string }

// userLimit is a limit of running applications per user; user "*" is
// every user without a limit of their own.
type userLimit struct {
	user, what string
	count
}

// limits are a queue's settings that YuniKorn's scheduler enforces;
// users are set on the root queue only.
type limits struct {
	guaranteed, max, childMax resources
	maxApps                   count
	props                     []prop
	users                     []userLimit
}

const mi = 1 << 20

// memoryUnits are the units YARN and YuniKorn share, in bytes.
var memoryUnits = map[string]int64{"": mi, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "Ki": 1 << 10, "Mi": mi, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50}

var (
	oldMemory = regexp.MustCompile(`(-?\d+)(\.\d*)?\s*mb`)
	oldVcores = regexp.MustCompile(`(-?\d+)(\.\d*)?\s*vcores`)
	quantity  = regexp.MustCompile(`^(\d+)([a-zA-Z]*)$`)
)

// fairResources reads a Fair Scheduler resource value as
// FairSchedulerConfiguration.parseResourceConfigValue does: "X mb, Y
// vcores" or "memory-mb=X, vcores=Y"; percentages are not imported.
func fairResources(text string, at pos, what string, d *diags) (res, bool) {
	v := strings.TrimSpace(text)
	switch {
	case v == "":
		d.errorf(at, "%s is empty, which YARN fails to load", what)
		return nil, false
	case strings.Contains(v, "%"):
		d.warnf(at, "%s %q is not imported: a share of the cluster needs the cluster's size, and YuniKorn's resources are absolute; write them by hand", what, text)
		return nil, false
	case strings.Contains(v, "="):
		return resourceList(v, at, what, false, d)
	}
	r := res{}
	for _, t := range []struct {
		name, unit string
		re         *regexp.Regexp
		scale      int64
	}{{"memory", "mb", oldMemory, mi}, {"vcore", "vcores", oldVcores, 1000}} {
		m := t.re.FindStringSubmatch(strings.ToLower(v))
		if m == nil {
			d.errorf(at, "%s %q: no %s: YARN reads \"X mb, Y vcores\" and fails to load a value without both", what, text, t.unit)
			return nil, false
		}
		n, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil || n < 0 {
			d.errorf(at, "%s %q: %s is not a whole number from 0 to 2147483647, which YARN fails to load", what, text, m[1])
			return nil, false
		}
		r[t.name] = n * t.scale
	}
	return r, true
}

// capacityResources reads a Capacity Scheduler capacity or
// maximum-capacity: an absolute resource, "[memory=10240,vcores=12]", is
// imported; a percentage or a weight that limits something is warned about.
func capacityResources(p *property, path, key string, d *diags) (res, bool) {
	v := strings.TrimSpace(p.value)
	what := fmt.Sprintf("queue %s: %s", path, key)
	if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
		return resourceList(v[1:len(v)-1], p.valueAt, what, true, d)
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "w"), 64)
	switch {
	case err != nil:
		d.errorf(p.valueAt, "%s %q: want a percentage, a weight such as 2w, or an absolute resource such as [memory=10240,vcores=12] (YARN fails to load it)", what, p.value)
	case !strings.HasSuffix(v, "w") && (path == policy.RootQueue || key == "capacity" && f == 0 || key == "maximum-capacity" && (f == 100 || f == -1)):
	default:
		d.warnf(p.valueAt, "%s %q is not imported: a share of the parent needs the cluster's size, and YuniKorn's resources are absolute; write them by hand", what, p.value)
	}
	return nil, false
}

// resourceList reads "name=value, …": memory (MB, or with a unit when
// units) and vcores; Kubernetes names other types otherwise.
func resourceList(v string, at pos, what string, units bool, d *diags) (res, bool) {
	r := res{}
	for _, kv := range strings.Split(v, ",") {
		name, val, ok := strings.Cut(kv, "=")
		name, val = strings.TrimSpace(name), strings.TrimSpace(val)
		if !ok && name == "" && units {
			continue
		}
		m := quantity.FindStringSubmatch(val)
		scale, known := memoryUnits[""], true
		if m != nil && m[2] != "" {
			scale, known = memoryUnits[m[2]]
		}
		switch {
		case !ok || strings.Contains(val, "="):
			d.errorf(at, "%s %q: %q is not name=value, which YARN fails to load", what, v, strings.TrimSpace(kv))
			return nil, false
		case m == nil || !units && m[2] != "" || !known:
			d.errorf(at, "%s %q: %s %q is not a whole number%s, which YARN fails to load", what, v, name, val, map[bool]string{true: " with an optional unit (Ki, Mi, Gi, k, M, G, …)"}[units])
			return nil, false
		}
		n, err := strconv.ParseInt(m[1], 10, 64)
		switch {
		case name == "memory-mb" || units && name == "memory":
			if err != nil || n > math.MaxInt64/scale {
				d.errorf(at, "%s %q: memory %s is too large", what, v, val)
				return nil, false
			}
			r["memory"] = n * scale
		case name == "vcores" && m[2] == "" && err == nil && n <= math.MaxInt64/1000:
			r["vcore"] = n * 1000
		case name == "vcores":
			d.errorf(at, "%s %q: vcores %q is not a whole number of cores, which YARN fails to load", what, v, val)
			return nil, false
		default:
			d.warnf(at, "%s: resource %s is not imported: Kubernetes, and so YuniKorn, names it otherwise (nvidia.com/gpu, …); add it to the queue's resources by hand", what, name)
		}
	}
	return r, true
}

// readCount reads a limit of running applications, a whole number as
// YARN's Integer.parseInt reads it.
func readCount(text string, at pos, what string, d *diags) count {
	n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 32)
	switch {
	case err != nil:
		d.errorf(at, "%s %q: want a whole number (YARN fails to load it)", what, text)
	case n <= 0:
		d.warnf(at, "%s %d is not imported: YARN runs no application there, and YuniKorn reads maxapplications 0 as no limit; remove the queue's submitacl instead", what, n)
		return count{at: at} // set, so no default fills it in
	default:
		return count{n: n, at: at, from: at.String()}
	}
	return count{}
}

// defaultMaxApps reads setting name: the running applications of each
// queue that sets none.
func defaultMaxApps(root *Queue, name, text string, at pos, d *diags) {
	c := readCount(text, at, name, d)
	c.from = name + " (" + at.String() + ")"
	each(root, policy.RootQueue, func(q *Queue, _ string) {
		if q.maxApps.at.file == "" {
			q.maxApps = c
		}
	})
}

// addUser adds a user limit to the root queue: a later one for the same
// user replaces the earlier, as YARN reads them.
func addUser(root *Queue, user, what, text string, at pos, d *diags) {
	if user != "*" && !placement.UserPattern.MatchString(user) {
		d.warnf(at, "%s is not imported: YuniKorn's limits take user names matching %s", what, placement.UserPattern)
		return
	}
	c := readCount(text, at, what, d)
	if c.n == 0 {
		return
	}
	root.users = slices.DeleteFunc(root.users, func(u userLimit) bool {
		if u.user == user {
			d.warnf(at, "%s is set twice (first at %s); the later one is used, as YARN does", what, u.from)
		}
		return u.user == user
	})
	root.users = append(root.users, userLimit{user, what, c})
}

// each calls fn for q and every queue below it, with its path.
func each(q *Queue, path string, fn func(q *Queue, path string)) {
	fn(q, path)
	for _, c := range q.Children {
		each(c, path+"."+strings.ToLower(c.Name), fn)
	}
}

// fit gives q and the queues below it the limits YARN enforces, in the
// form yunikorn-core's configvalidator.go accepts (a max within the
// parent's, pmax, and above the guaranteed; children guaranteed no more
// than the parent; maxapplications within the parent's), warning about
// each value changed. It returns what q adds to its parent's guaranteed
// sum: its own, or its children's when it has none.
func fit(q *Queue, path string, pmax res, papps count, d *diags) res {
	g, m := q.guaranteed.q, q.max.q
	was := m.String()
	raised := false
	for k, v := range g {
		if mv, ok := m[k]; ok && mv < v {
			m[k], raised = v, true // FSQueue.getMaxShare
		}
	}
	if raised {
		d.warnf(q.max.at, "queue %s: max %s is below guaranteed %s: written as %s, as YARN raises it", path, was, g, m)
	}
	was = m.String()
	if clamp(m, pmax) {
		d.warnf(q.max.at, "queue %s: max %s is above the max of the queues above it, %s: written as %s, the limit YARN enforces (YuniKorn refuses a max above its parent's)", path, was, pmax, m)
	}
	eff := res{}
	maps.Copy(eff, pmax)
	maps.Copy(eff, m)
	if was = g.String(); clamp(g, eff) {
		maps.DeleteFunc(g, func(_ string, v int64) bool { return v == 0 })
		d.warnf(q.guaranteed.at, "queue %s: guaranteed %s is above the max %s: written as %s (YuniKorn refuses a guaranteed above the max)", path, was, eff, g)
	}
	switch {
	case papps.n == 0:
	case q.maxApps.n == 0:
		q.maxApps = count{papps.n, papps.at, "as the queue above (" + papps.at.String() + "): YuniKorn needs a maxapplications below a parent that sets one"}
	case q.maxApps.n > papps.n:
		d.warnf(q.maxApps.at, "queue %s: %d running applications are more than the %d of the queue above (%s): written as %d, the limit YARN enforces (YuniKorn refuses more)", path, q.maxApps.n, papps.n, papps.at, papps.n)
		q.maxApps.n = papps.n
	}
	sum := res{}
	for _, c := range q.Children {
		for k, v := range fit(c, path+"."+strings.ToLower(c.Name), eff, q.maxApps, d) {
			sum[k] += v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(sum)) {
		v := sum[k]
		if ev, ok := eff[k]; ok && v > ev {
			for _, c := range q.Children {
				dropGuaranteed(c, path+"."+strings.ToLower(c.Name), k, fmt.Sprintf("the children of %s are guaranteed %s in all, more than its max %s", path, res{k: v}, res{k: ev}), d)
			}
			delete(sum, k)
		} else if gv, ok := g[k]; ok && v > gv {
			d.warnf(q.guaranteed.at, "queue %s: guaranteed %s is not written: its children are guaranteed %s in all, and YuniKorn refuses a parent guaranteed less than its children", path, res{k: gv}, res{k: v})
			delete(g, k)
		}
	}
	if len(g) > 0 {
		return g
	}
	return sum
}

// clamp lowers each quantity of r to limit's, reporting whether any was.
func clamp(r, limit res) bool {
	changed := false
	for k, v := range r {
		if lv, ok := limit[k]; ok && v > lv {
			r[k], changed = lv, true
		}
	}
	return changed
}

// dropGuaranteed leaves resource k out of q's guaranteed, or below q.
func dropGuaranteed(q *Queue, path, k, why string, d *diags) {
	if v, ok := q.guaranteed.q[k]; ok {
		d.warnf(q.guaranteed.at, "queue %s: guaranteed %s is not written: %s, which YuniKorn refuses", path, res{k: v}, why)
		delete(q.guaranteed.q, k)
		return
	}
	if len(q.guaranteed.q) == 0 {
		for _, c := range q.Children {
			dropGuaranteed(c, path+"."+strings.ToLower(c.Name), k, why, d)
		}
	}
}

// fitUsers keeps the root queue's user limits within its maxapplications,
// as YuniKorn's validator requires, and puts the wildcard last.
func fitUsers(root *Queue, d *diags) {
	for i, u := range root.users {
		if n := root.maxApps.n; n > 0 && u.n > n {
			d.warnf(u.at, "%s: %d running applications are more than the %d of the root queue: written as %d, the limit YARN enforces (YuniKorn refuses more)", u.what, u.n, n, n)
			root.users[i].n = n
		}
	}
	// No user name holds a '*' (placement.UserPattern).
	slices.SortStableFunc(root.users, func(a, b userLimit) int { return strings.Count(a.user, "*") - strings.Count(b.user, "*") })
}

// String writes r as YuniKorn's quantities, in a stable order.
func (r res) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r)) {
		parts = append(parts, k+" "+r.quantity(k))
	}
	return strings.Join(parts, ", ")
}

// quantity writes r[k] in YuniKorn's syntax: memory with the largest
// unit that divides it, vcore in cores or millicores.
func (r res) quantity(k string) string {
	v := r[k]
	if k == "vcore" {
		if v%1000 == 0 {
			return strconv.FormatInt(v/1000, 10)
		}
		return strconv.FormatInt(v, 10) + "m"
	}
	best, unit := int64(1), ""
	for u, s := range memoryUnits {
		if u != "" && v%s == 0 && s > best {
			best, unit = s, u
		}
	}
	return strconv.FormatInt(v/best, 10) + unit
}

// node writes the resources as a mapping of quantities.
func (r resources) node() *yaml.Node {
	n := mapping()
	for _, k := range slices.Sorted(maps.Keys(r.q)) {
		n.Content = append(n.Content, plain(k), plain(r.q.quantity(k)))
	}
	return n
}

// pairs are the limits as the keys and values of a queue, each value with
// a comment saying where it came from.
func (l *limits) pairs() []any {
	props := mapping()
	for _, x := range l.props {
		props.Content = append(props.Content, plain(x.key), commented(plain(x.value), x.from))
	}
	users := sequence()
	for _, u := range l.users {
		users.Content = append(users.Content, mapping("limit", plain(u.what), "users", sequence(plain(u.user)), "maxapplications", number(u.count)))
	}
	return []any{
		"resources", mapping(commented(plain("guaranteed"), l.guaranteed.from), l.guaranteed.node(),
			commented(plain("max"), l.max.from), l.max.node()),
		"maxapplications", number(l.maxApps),
		"properties", props,
		"childtemplate", mapping("resources", mapping(commented(plain("max"), l.childMax.from), l.childMax.node())),
		"limits", users,
	}
}

// number writes a count; none (0) is nil.
func number(c count) *yaml.Node {
	if c.n == 0 {
		return nil
	}
	return commented(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(c.n, 10)}, c.from)
}
