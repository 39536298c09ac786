package settings

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func decodeYAML(t *testing.T, doc string) Config {
	t.Helper()
	var file struct {
		AdmissionController Config `yaml:"admissionController"`
	}
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return file.AdmissionController
}

func TestConfigYAML(t *testing.T) {
	c := decodeYAML(t, `
admissionController:
  accessControl:
    bypassAuth: true
    trustControllers: false
    systemUsers: "^system:serviceaccount:kube-system:, ^system:kube-controller-manager$"
    externalUsers: ["^airflow$", "^livy{1,2}$"]
    externalGroups: ""
  processNamespaces: ["^team-"]
  bypassNamespaces: []
  enforceQueueACLs: true
  queueSources:
    - {kind: label, key: kueue.x-k8s.io/queue-name, scheduler: kueue, template: "root.{namespace}.{value}"}
  queueMapping:
    template: "root.{value}"
    table:
      - {scheduler: kueue, namespace: team-a, value: gpu, queue: root.gpu}
  partition: gpu
`)
	want := Config{
		AccessControl: AccessControl{
			BypassAuth:       true,
			TrustControllers: boolPtr(false),
			SystemUsers:      Patterns{"^system:serviceaccount:kube-system:", "^system:kube-controller-manager$"},
			ExternalUsers:    Patterns{"^airflow$", "^livy{1,2}$"},
			ExternalGroups:   Patterns{},
		},
		ProcessNamespaces: Patterns{"^team-"},
		BypassNamespaces:  Patterns{},
		EnforceQueueACLs:  true,
		QueueSources:      []QueueSource{{Kind: "label", Key: "kueue.x-k8s.io/queue-name", Scheduler: "kueue", Template: "root.{namespace}.{value}"}},
		QueueMapping: QueueMapping{Template: "root.{value}", Table: []QueueMappingEntry{
			{Scheduler: "kueue", Namespace: "team-a", Value: "gpu", Queue: "root.gpu"}}},
		Partition: "gpu",
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	cc := MustCompile(c)
	if cc.bypassNS.Match("kube-system") || !cc.ProcessNamespace("team-x") || cc.ProcessNamespace("kube-system") {
		t.Fatal("namespace settings not applied")
	}

	// Unset fields take their defaults; nil and empty differ.
	c = decodeYAML(t, "admissionController:\n  accessControl:\n    systemUsers:\n")
	if c.AccessControl.SystemUsers != nil {
		t.Fatalf("null systemUsers = %#v, want nil (default)", c.AccessControl.SystemUsers)
	}
	if got := c.Defaulted(); !reflect.DeepEqual(got, Config{}.Defaulted()) {
		t.Fatalf("defaulted %+v", got)
	}
	c = decodeYAML(t, "admissionController:\n  accessControl:\n    systemUsers: \"\"\n  queueSources: []\n")
	d := c.Defaulted()
	if d.AccessControl.SystemUsers == nil || len(d.AccessControl.SystemUsers) != 0 || len(d.QueueSources) != 0 {
		t.Fatalf("explicit empty values replaced by defaults: %+v", d)
	}

	var bad struct {
		AdmissionController Config `yaml:"admissionController"`
	}
	if err := yaml.Unmarshal([]byte("admissionController:\n  accessControl:\n    systemUsers: {a: b}\n"), &bad); err == nil ||
		!strings.Contains(err.Error(), "want a regular expression") {
		t.Fatalf("mapping as patterns: %v", err)
	}
	if err := yaml.Unmarshal([]byte("admissionController:\n  accessControl:\n    systemUsers: [[a]]\n"), &bad); err == nil {
		t.Fatal("nested list accepted")
	}
}

func TestDefaults(t *testing.T) {
	d := Config{}.Defaulted()
	if !*d.AccessControl.TrustControllers || d.AccessControl.BypassAuth || d.EnforceQueueACLs || d.Partition != "default" {
		t.Fatalf("defaults %+v", d)
	}
	// YuniKorn's user/group lookup design: both ways a controller manager
	// authenticates are trusted.
	c := MustCompile(Config{})
	for _, u := range []string{"system:serviceaccount:kube-system:replicaset-controller", "system:kube-controller-manager"} {
		if !c.SystemUsers.Match(u) {
			t.Errorf("%s is not a trusted controller by default", u)
		}
	}
	for _, u := range []string{"system:kube-controller-manager-evil", "system:serviceaccount:kube-systemx:a", "alice"} {
		if c.SystemUsers.Match(u) {
			t.Errorf("%s is trusted by default", u)
		}
	}
	if !reflect.DeepEqual(d.QueueSources, defaultQueueSources) || &d.QueueSources[0] == &defaultQueueSources[0] {
		t.Fatal("queue sources not a copy of the defaults")
	}
	if ws := d.Warnings(); len(ws) != 0 {
		t.Fatalf("default configuration warns: %v", ws)
	}
}

func TestParsePatterns(t *testing.T) {
	for in, want := range map[string]Patterns{
		"":                {},
		" , ,":            {},
		"a":               {"a"},
		" ^a$ , b ,,c ":   {"^a$", "b", "c"},
		"^x{1,2}$":        {"^x{1", "2}$"}, // the string form splits on commas: use the list form
		"^system:a:,^b$ ": {"^system:a:", "^b$"},
	} {
		if got := ParsePatterns(in); !reflect.DeepEqual(got, want) {
			t.Errorf("ParsePatterns(%q) = %#v, want %#v", in, got, want)
		}
	}
}

func TestResolveEnv(t *testing.T) {
	env := func(kv ...string) func(string) (string, bool) {
		mp := m(kv...)
		return func(k string) (string, bool) { v, ok := mp[k]; return v, ok }
	}
	base := Config{AccessControl: AccessControl{ExternalUsers: Patterns{"^file$"}}}
	cases := []struct {
		name    string
		env     func(string) (string, bool)
		check   func(Config) bool
		wantErr string
	}{
		{"nothing set", env(), func(c Config) bool { return reflect.DeepEqual(c, base.Defaulted()) }, ""},
		{"no lookup", nil, func(c Config) bool { return reflect.DeepEqual(c, base.Defaulted()) }, ""},
		{"bypass auth", env("ADMISSION_CONTROLLER_BYPASS_AUTH", "true"), func(c Config) bool { return c.AccessControl.BypassAuth }, ""},
		{"trust controllers", env("ADMISSION_CONTROLLER_TRUST_CONTROLLERS", "false"), func(c Config) bool { return !*c.AccessControl.TrustControllers }, ""},
		{"the design page's name", env("ADMISSION_CONTROLLER_BYPASS_CONTROLLERS", "0"), func(c Config) bool { return !*c.AccessControl.TrustControllers }, ""},
		{"both names agree", env("ADMISSION_CONTROLLER_BYPASS_CONTROLLERS", "FALSE", "ADMISSION_CONTROLLER_TRUST_CONTROLLERS", "f"), func(c Config) bool { return !*c.AccessControl.TrustControllers }, ""},
		{"both names disagree", env("ADMISSION_CONTROLLER_BYPASS_CONTROLLERS", "true", "ADMISSION_CONTROLLER_TRUST_CONTROLLERS", "false"), nil,
			`ADMISSION_CONTROLLER_TRUST_CONTROLLERS: "false" and ADMISSION_CONTROLLER_BYPASS_CONTROLLERS="true" disagree`},
		{"bad boolean", env("ADMISSION_CONTROLLER_BYPASS_AUTH", "yes"), nil, `ADMISSION_CONTROLLER_BYPASS_AUTH: invalid boolean "yes"`},
		{"bad boolean under the design page's name", env("ADMISSION_CONTROLLER_BYPASS_CONTROLLERS", "maybe"), nil, "ADMISSION_CONTROLLER_BYPASS_CONTROLLERS"},
		{"bad regex, named by its variable", env("ADMISSION_CONTROLLER_EXTERNAL_GROUPS", "^ok$,a("), nil,
			`ADMISSION_CONTROLLER_EXTERNAL_GROUPS[1]: invalid regular expression "a("`},
		{"patterns", env("ADMISSION_CONTROLLER_SYSTEM_USERS", "^a$,^b$", "ADMISSION_CONTROLLER_EXTERNAL_GROUPS", "^g$"), func(c Config) bool {
			return reflect.DeepEqual(c.AccessControl.SystemUsers, Patterns{"^a$", "^b$"}) && reflect.DeepEqual(c.AccessControl.ExternalGroups, Patterns{"^g$"})
		}, ""},
		{"empty overrides the file", env("ADMISSION_CONTROLLER_EXTERNAL_USERS", ""), func(c Config) bool {
			return c.AccessControl.ExternalUsers != nil && len(c.AccessControl.ExternalUsers) == 0
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cc, _, err := Resolve(base, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(cc.Config()) {
				t.Fatalf("err %v, config %+v", err, cc.Config())
			}
		})
	}
}

func TestFromConfigMap(t *testing.T) {
	c, err := FromConfigMap(map[string]string{
		"queues.yaml": "partitions: []",
		"log.level":   "debug",
		"admissionController.accessControl.bypassAuth":       "true",
		"admissionController.accessControl.trustControllers": "false",
		"admissionController.accessControl.systemUsers":      "^system:serviceaccount:kube-system:,^system:kube-controller-manager$",
		"admissionController.accessControl.externalUsers":    "^airflow$",
		"admissionController.accessControl.externalGroups":   "",
		"admissionController.filtering.processNamespaces":    "^team-",
		"admissionController.filtering.bypassNamespaces":     "^kube-system$,^monitoring$",
		"admissionController.filtering.labelNamespaces":      "ignored",
		"admissionController.webHook.amServiceName":          "ignored",
		"admissionController.enforceQueueACLs":               "true",
		"admissionController.partition":                      "gpu",
		"admissionController.queueSources":                   "- {kind: label, key: kueue.x-k8s.io/queue-name, scheduler: kueue}\n",
		"admissionController.queueMapping":                   "template: root.{namespace}.{value}\n",
		"admissionController.stampGroups":                    "given",
		"admissionController.stampGroupsOnError":             " deny",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		AccessControl: AccessControl{BypassAuth: true, TrustControllers: boolPtr(false),
			SystemUsers:    Patterns{"^system:serviceaccount:kube-system:", "^system:kube-controller-manager$"},
			ExternalUsers:  Patterns{"^airflow$"},
			ExternalGroups: Patterns{}},
		ProcessNamespaces:  Patterns{"^team-"},
		BypassNamespaces:   Patterns{"^kube-system$", "^monitoring$"},
		EnforceQueueACLs:   true,
		Partition:          "gpu",
		QueueSources:       []QueueSource{{Kind: "label", Key: "kueue.x-k8s.io/queue-name", Scheduler: "kueue"}},
		QueueMapping:       QueueMapping{Template: "root.{namespace}.{value}"},
		StampGroups:        StampGiven,
		StampGroupsOnError: StampDeny,
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got  %+v\nwant %+v", c, want)
	}
	MustCompile(c)

	c, err = FromConfigMap(map[string]string{})
	if err != nil || !reflect.DeepEqual(c.Defaulted(), Config{}.Defaulted()) {
		t.Fatalf("empty ConfigMap: %+v %v", c, err)
	}

	_, err = FromConfigMap(map[string]string{
		"admissionController.accessControl.bypassAuth":   "yes",
		"admissionController.accessControl.systemUser":   "^x$",
		"admissionController.enforceQueueACLs":           "2",
		"admissionController.queueSources":               "{not: a list}",
		"admissionController.bypassNamespaces":           "^a$",
		"admissionController.filtering.bypassNamespaces": "^b$",
	})
	for _, want := range []string{
		`admissionController.accessControl.bypassAuth: invalid boolean "yes"`,
		"admissionController.accessControl.systemUser: unknown admission controller setting",
		`admissionController.enforceQueueACLs: invalid boolean "2"`,
		"admissionController.queueSources: want a YAML list",
		"admissionController.bypassNamespaces: admissionController.filtering.bypassNamespaces is the same setting",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}

func TestWarnings(t *testing.T) {
	c := Config{
		AccessControl: AccessControl{
			BypassAuth:       true,
			TrustControllers: boolPtr(false),
			SystemUsers:      Patterns{"^system:serviceaccount:kube-system:", "^system:kube-controller-manager"},
			ExternalUsers:    Patterns{"admin", "^ok$", `\Aalso-ok\z`, "a.*b"},
			ExternalGroups:   Patterns{".*", "^admins"},
		},
		ProcessNamespaces: Patterns{"team"},
		BypassNamespaces:  append(Patterns{"(", "^kube-system$"}, ParsePatterns("^x{1,2}$")...),
	}
	var got []string
	for _, w := range c.Warnings() {
		got = append(got, w.String())
	}
	want := []string{
		`admissionController.accessControl.systemUsers: pattern "^system:kube-controller-manager" is not anchored at the end: it also trusts "system:kube-controller-managerx"; write "^system:kube-controller-manager$"`,
		`admissionController.accessControl.externalUsers: pattern "admin" is not anchored: it also trusts "system:serviceaccount:any-namespace:admin" (the service account admin of every namespace); write "^admin$" for the user of that name, or "^system:serviceaccount:<namespace>:admin$" for one service account`,
		`admissionController.accessControl.externalUsers: pattern "a.*b" is not anchored: it also trusts users that merely contain a match; write "^a.*b$"`,
		`admissionController.accessControl.externalGroups: pattern ".*" matches every group`,
		`admissionController.accessControl.externalGroups: pattern "^admins" is not anchored at the end: it also trusts "adminsx"; write "^admins$"`,
		`admissionController.processNamespaces: pattern "team" is not anchored: it also matches "notteam"; write "^team$" (or end it with "-" for a prefix)`,
		`admissionController.bypassNamespaces: pattern "^x{1" has unbalanced braces: was a repetition such as {1,3} split at its comma? Write patterns containing commas in the YAML list form`,
		`admissionController.bypassNamespaces: pattern "2}$" has unbalanced braces: was a repetition such as {1,3} split at its comma? Write patterns containing commas in the YAML list form`,
		`admissionController.accessControl.bypassAuth: is true: any submitter may set yunikorn.apache.org/user.info to any identity; use only in a trusted cluster`,
		`admissionController.accessControl.trustControllers: is false: pods and ReplicaSets that controllers create from stamped workloads will be denied`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The number of queue sources has no cap: each is compiled, in order.
func TestManySources(t *testing.T) {
	src := make([]QueueSource, 20)
	for i := range src {
		src[i] = QueueSource{Kind: "label", Key: fmt.Sprintf("q%d", i), Scheduler: "kueue"}
	}
	c := MustCompile(Config{QueueSources: src})
	if len(c.Sources) != 20 || c.Sources[19].Key != "q19" || c.Sources[19].PodLevel {
		t.Fatalf("sources %+v", c.Sources)
	}
}

func TestCompileErrors(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"bad regex", Config{AccessControl: AccessControl{ExternalUsers: Patterns{"^ok$", "a("}}},
			[]string{`admissionController.accessControl.externalUsers[1]: invalid regular expression "a(": missing closing ): a(`}},
		{"bad namespace regex", Config{BypassNamespaces: Patterns{"[z-a]"}},
			[]string{`admissionController.bypassNamespaces[0]: invalid regular expression "[z-a]"`}},
		{"bad sources", Config{QueueSources: []QueueSource{
			{Kind: "labels", Key: "q"}, {Kind: "label", Key: ""}, {Kind: "label", Key: "q"}, {Kind: "label", Key: "q"},
			{Kind: "annotation", Key: "a", Template: "root.{value"}, {Kind: "annotation", Key: "b", Template: "root.{user}"},
			{Kind: "annotation", Key: "c", Template: "root.}"},
		}}, []string{
			`admissionController.queueSources[0].kind: "labels" is not a marker kind: want label or annotation`,
			`admissionController.queueSources[1].key: "" is not a label or annotation key`,
			`admissionController.queueSources[3]: label "q" is already source 2`,
			`admissionController.queueSources[4].template: "root.{value": unterminated {`,
			`admissionController.queueSources[5].template: "root.{user}": unknown placeholder {user}: want {value}, {namespace} or {scheduler}`,
			`admissionController.queueSources[6].template: "root.}": unmatched }`,
		}},
		{"bad mapping", Config{QueueMapping: QueueMapping{Template: "{x}", Table: []QueueMappingEntry{{Queue: "a.b"}, {Value: "v", Queue: "root..b"}}}},
			[]string{
				`admissionController.queueMapping.template: "{x}": unknown placeholder`,
				`admissionController.queueMapping.table[0].value: required`,
				`admissionController.queueMapping.table[0].queue: "a.b" is not a queue path`,
				`admissionController.queueMapping.table[1].queue: "root..b" is not a queue path: name 1 is empty`,
			}},
		{"partition blanks", Config{Partition: " default"}, []string{`admissionController.partition: " default" has leading or trailing blanks`}},
		{"stamp settings", Config{StampGroups: "merged", StampGroupsOnError: "allow"}, []string{
			`admissionController.stampGroups: "merged": want decided or given`,
			`admissionController.stampGroupsOnError: "allow": want given or deny`}},
		{"directory groups as modify ACL", Config{ModifyACLAnnotation: DirectoryGroupsAnnotation}, []string{"is the user.info annotation or its companion"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.Compile()
			if err == nil {
				t.Fatal("compiled")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
		})
	}
}

func boolPtr(b bool) *bool { return &b }

func m(kv ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestDeleteConfig: the settings in YAML and in a ConfigMap, their
// defaults, their errors and their warnings.
func TestDeleteConfig(t *testing.T) {
	c := decodeYAML(t, "admissionController:\n  enforceDeleteACLs: true\n  modifyACLAnnotation: example.com/modify-acl\n")
	if !c.EnforceDeleteACLs || c.ModifyACLAnnotation != "example.com/modify-acl" {
		t.Fatalf("YAML: %+v", c)
	}
	d := Config{}.Defaulted()
	if d.EnforceDeleteACLs || d.ModifyACLAnnotation != "usher.io/modify-acl" {
		t.Fatalf("defaults: %+v", d)
	}
	c, err := FromConfigMap(map[string]string{
		"admissionController.enforceDeleteACLs":   "true",
		"admissionController.modifyACLAnnotation": " example.com/modify-acl ",
	})
	if err != nil || !c.EnforceDeleteACLs || c.ModifyACLAnnotation != "example.com/modify-acl" {
		t.Fatalf("ConfigMap: %+v %v", c, err)
	}
	if _, err := FromConfigMap(map[string]string{"admissionController.enforceDeleteACLs": "sometimes"}); err == nil ||
		!strings.Contains(err.Error(), `admissionController.enforceDeleteACLs: invalid boolean "sometimes"`) {
		t.Fatalf("bad boolean: %v", err)
	}

	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"blank key", Config{ModifyACLAnnotation: "a b"}, `admissionController.modifyACLAnnotation: "a b" is not an annotation key`},
		{"user.info", Config{ModifyACLAnnotation: UserInfoAnnotation}, "is the user.info annotation"},
		{"marker clash", Config{QueueSources: []QueueSource{{Kind: "annotation", Key: DefaultModifyACLAnnotation}}},
			`admissionController.queueSources[0].key: annotation "usher.io/modify-acl" holds user.info or the modify ACL, not a queue`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.cfg.Compile(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}

	warns := func(c Config) string {
		var out []string
		for _, w := range c.Warnings() {
			out = append(out, w.String())
		}
		return strings.Join(out, "\n")
	}
	if w := warns(Config{EnforceDeleteACLs: true}); w != "" {
		t.Fatalf("default delete configuration warns: %s", w)
	}
	if w := warns(Config{EnforceDeleteACLs: true, AccessControl: AccessControl{SystemUsers: Patterns{"^system:kube-controller-manager$"}}}); w != "" {
		t.Fatalf("shared controller-manager user only warns: %s", w)
	}
	for _, c := range []Config{
		{EnforceDeleteACLs: true, AccessControl: AccessControl{TrustControllers: boolPtr(false)}},
		{EnforceDeleteACLs: true, AccessControl: AccessControl{SystemUsers: Patterns{}}},
	} {
		if w := warns(c); !strings.Contains(w, "admissionController.enforceDeleteACLs: is true but neither "+
			`"system:serviceaccount:kube-system:generic-garbage-collector" nor "system:kube-controller-manager" is a trusted controller`) {
			t.Errorf("warnings for %+v:\n%s", c.AccessControl, w)
		}
	}
}
