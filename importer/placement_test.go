package importer_test

import (
	"strings"
	"testing"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/importer"
	"github.com/usherhq/usher/placement"
)

// placeIn places an application for user (groups) naming queue in the
// imported configuration's default partition.
func placeIn(t *testing.T, cfg *config.Config, user string, groups []string, queue string) placement.Result {
	t.Helper()
	cp, err := cfg.Snapshot.Partition("default")
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Partitions[0].PlacementRules().Place(cp, placement.Request{Subject: acl.NewSubject(user, groups), Queue: queue})
}

const fairPlacementXML = `<?xml version="1.0"?>
<allocations>
  <queue name="root">
    <aclSubmitApps> </aclSubmitApps>
    <aclAdministerApps> </aclAdministerApps>
    <queue name="analytics">
      <aclSubmitApps> analysts</aclSubmitApps>
    </queue>
    <queue name="users">
      <aclSubmitApps>*</aclSubmitApps>
    </queue>
    <queue name="ops">
      <aclSubmitApps> ops</aclSubmitApps>
    </queue>
  </queue>
  <queuePlacementPolicy>
    <rule name="specified" create="false"/>
    <rule name="secondaryGroupExistingQueue"/>
    <rule name="nestedUserQueue">
      <rule name="default" queue="users"/>
    </rule>
    <rule name="reject"/>
    <rule name="user"/>
  </queuePlacementPolicy>
</allocations>
`

// A Fair Scheduler queuePlacementPolicy becomes placement rules, each
// with the YARN rule it came from, and places as YARN does where the rules
// have an exact equivalent; everything else is a warning.
func TestImportFairPlacement(t *testing.T) {
	c, cfg, out := imported(t, importer.YARNFiles{FairScheduler: src("fair-scheduler.xml", fairPlacementXML)})
	yaml := string(out)
	for _, want := range []string{
		"placementrules:",
		`# from fair-scheduler.xml:17: <rule name="specified">`,
		"- name: provided",
		"- name: secondaryGroup",
		`# from fair-scheduler.xml:19: <rule name="nestedUserQueue">`,
		"value: root.users",
	} {
		if !strings.Contains(yaml, want) {
			t.Errorf("YAML lacks %q:\n%s", want, yaml)
		}
	}
	if strings.Contains(yaml, `name="user"`) {
		t.Errorf("a rule after reject was imported:\n%s", yaml)
	}
	w := warnings(c)
	for _, want := range []string{
		"fair-scheduler.xml:17:", "specified becomes provided", "root.a_dot_b",
		"secondaryGroupExistingQueue becomes the usher extension secondaryGroup",
		"reject: not written",
		`placement rule "user" follows a reject rule`,
		"YARN checks the submit ACL of the queue placement chose",
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	for _, tt := range []struct {
		user   string
		groups []string
		queue  string
		placed string
	}{
		{"ann", []string{"analysts"}, "root.analytics", "root.analytics"}, // specified
		{"olga", []string{"staff", "ops"}, "", "root.ops"},                // secondaryGroupExistingQueue
		{"john.doe", []string{"staff"}, "", "root.users.john_dot_doe"},    // nestedUserQueue under default users
		{"ann", []string{"analysts"}, "root.nope", "root.users.ann"},      // specified without create: next rule
	} {
		res := placeIn(t, cfg, tt.user, tt.groups, tt.queue)
		if res.Queue != tt.placed {
			t.Errorf("%s %v %q: placed in %q (%s), want %q", tt.user, tt.groups, tt.queue, res.Queue, res.Reason(), tt.placed)
		}
	}
}

const capacityPlacementXML = `<?xml version="1.0"?>
<configuration>
  <property><name>yarn.scheduler.capacity.root.queues</name><value>default,eng,users</value></property>
  <property><name>yarn.scheduler.capacity.root.acl_submit_applications</name><value> </value></property>
  <property><name>yarn.scheduler.capacity.root.acl_administer_queue</name><value> </value></property>
  <property><name>yarn.scheduler.capacity.root.default.acl_submit_applications</name><value>*</value></property>
  <property><name>yarn.scheduler.capacity.root.eng.queues</name><value>batch</value></property>
  <property><name>yarn.scheduler.capacity.root.eng.acl_submit_applications</name><value> eng</value></property>
  <property><name>yarn.scheduler.capacity.root.users.acl_submit_applications</name><value>*</value></property>
  <property><name>yarn.scheduler.capacity.root.users.auto-create-child-queue.enabled</name><value>true</value></property>
  <property><name>yarn.scheduler.capacity.queue-mappings</name><value>u:alice:batch,g:eng:root.eng.batch,u:%user:users.%user,u:%user:%primary_group,x:bad:q</value></property>
</configuration>
`

// Capacity Scheduler queue mappings become placement rules in order; the
// queue an application names comes first unless the override is on.
func TestImportCapacityMappings(t *testing.T) {
	c, cfg, out := imported(t, importer.YARNFiles{CapacityScheduler: src("capacity-scheduler.xml", capacityPlacementXML)})
	yaml := string(out)
	for _, want := range []string{
		"placementrules:",
		"# from yarn.scheduler.capacity.queue-mappings-override.enable is false",
		"# from capacity-scheduler.xml:11: u:alice:batch",
		"value: root.eng.batch",
		`users: ["alice"]`,
		`groups: ["eng"]`,
		"# from capacity-scheduler.xml:11: u:%user:users.%user",
		"- name: primaryGroup",
	} {
		if !strings.Contains(yaml, want) {
			t.Errorf("YAML lacks %q:\n%s", want, yaml)
		}
	}
	w := warnings(c)
	for _, want := range []string{`queue mapping "x:bad:q": not imported`, "usher extension primaryGroup", "YARN checks the submit ACL"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
	for _, tt := range []struct {
		user   string
		groups []string
		queue  string
		placed string
	}{
		{"bob", []string{"eng"}, "root.default", "root.default"}, // override off: the named queue first
		{"alice", []string{"eng"}, "", "root.eng.batch"},         // u:alice:batch (leaf name resolved)
		{"carl", []string{"eng"}, "", "root.eng.batch"},          // g:eng
		{"dora", []string{"sales"}, "", "root.users.dora"},       // u:%user:users.%user, created (auto-create)
	} {
		res := placeIn(t, cfg, tt.user, tt.groups, tt.queue)
		if res.Queue != tt.placed {
			t.Errorf("%s %v %q: placed in %q (%s), want %q", tt.user, tt.groups, tt.queue, res.Queue, res.Reason(), tt.placed)
		}
	}
}
