package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/usherhq/usher/decision"
	"github.com/usherhq/usher/server"
)

const placement = "../../../examples/placement.yaml"

// Every decision command's -o json and -o yaml output round-trips through
// the Go types (no field they do not know) and validates against the JSON
// Schema in docs/decision.schema.json; the exit status is the text
// output's, whose first line is unchanged.
func TestDecisionOutputSchema(t *testing.T) {
	schema := loadSchema(t)
	for _, tt := range []struct {
		name string
		args []string
		code int
		// check inspects the decoded output.
		check func(t *testing.T, o *decision.Output)
	}{
		{"check allowed", []string{"check", "--config", teams, "--queue", "root.ml.training", "--user", "ann", "--groups", "ml"}, 0, func(t *testing.T, o *decision.Output) {
			if o.Command != "check" || !o.Allowed || o.Queue != "root.ml.training" || o.Action != "submit" || o.Trail != nil ||
				o.Identity.User != "ann" || len(o.Identity.Groups) != 1 || o.Identity.Groups[0] != (decision.Group{Name: "ml", Source: "given"}) {
				t.Errorf("%+v", o)
			}
		}},
		{"check denied", []string{"check", "--config", teams, "--queue", "root.analytics.adhoc", "--user", "ann", "--groups", "ml"}, 1, func(t *testing.T, o *decision.Output) {
			if o.Allowed || !strings.Contains(o.Reason, "may not submit") {
				t.Errorf("%+v", o)
			}
		}},
		{"check admin", []string{"check", "--config", teams, "--queue", "root.ml", "--user", "ann", "--groups", "ml", "--action", "admin"}, 1, func(t *testing.T, o *decision.Output) {
			if o.Action != "admin" {
				t.Errorf("%+v", o)
			}
		}},
		{"check place", []string{"check", "--config", placement, "--place", "--tag", "namespace=spark", "--user", "alice", "--groups", "dev"}, 0, func(t *testing.T, o *decision.Output) {
			if o.Placement == nil || o.Placement.Queue != "root.teams.spark" || o.Queue != "root.teams.spark" || o.Trail != nil {
				t.Errorf("%+v", o)
			}
		}},
		{"explain", []string{"explain", "--config", teams, "--queue", "root.ml.training", "--user", "ann", "--groups", "ml"}, 0, func(t *testing.T, o *decision.Output) {
			if o.Trail == nil || len(o.Trail.ACLs) == 0 || len(o.Trail.Placement) != 0 {
				t.Fatalf("%+v", o)
			}
			// Exactly one ACL matched, and every ACL after it was not reached.
			matched := slices.IndexFunc(o.Trail.ACLs, func(s decision.ACLStep) bool { return s.Matched })
			if matched < 0 || o.Trail.ACLs[matched].Match == nil || !o.Trail.ACLs[matched].Reached {
				t.Fatalf("no match: %+v", o.Trail.ACLs)
			}
			for i, s := range o.Trail.ACLs {
				if s.Reached != (i <= matched) || (s.Matched != (i == matched)) || (s.Entry != "" && !s.Set) {
					t.Errorf("acl %d: %+v", i, s)
				}
			}
			last := o.Trail.ACLs[len(o.Trail.ACLs)-1]
			if last.ACL != "partition adminacl" || last.Queue != "" {
				t.Errorf("last: %+v", last)
			}
		}},
		{"explain denied", []string{"explain", "--config", teams, "--queue", "root.analytics.adhoc", "--user", "ann", "--groups", "ml"}, 1, func(t *testing.T, o *decision.Output) {
			for _, s := range o.Trail.ACLs {
				if !s.Reached || s.Matched || s.Match != nil {
					t.Errorf("denied, yet %+v", s)
				}
			}
		}},
		{"explain place", []string{"explain", "--config", placement, "--place", "--tag", "namespace=spark", "--user", "alice", "--groups", "dev"}, 0, func(t *testing.T, o *decision.Output) {
			if o.Trail == nil || len(o.Trail.Placement) == 0 || len(o.Trail.ACLs) == 0 || o.Placement == nil || !o.Placement.Create {
				t.Fatalf("%+v", o)
			}
			if s := o.Trail.Placement[len(o.Trail.Placement)-1]; s.Outcome != "placed" || s.Queue != "root.teams.spark" || s.Rule < 1 {
				t.Errorf("last rule: %+v", s)
			}
		}},
		{"explain place rejected", []string{"explain", "--config", placement, "--place", "--user", "olga", "--groups", "visitors"}, 1, func(t *testing.T, o *decision.Output) {
			if o.Allowed || o.Placement == nil || o.Placement.Placed || o.Queue != "" || len(o.Trail.Placement) == 0 || len(o.Trail.ACLs) != 0 {
				t.Errorf("%+v", o)
			}
		}},
		{"place", []string{"place", "--config", placement, "--user", "sam", "--groups", "staff"}, 0, func(t *testing.T, o *decision.Output) {
			if o.Command != "place" || o.Queue != "root.users.sam" || o.Trail == nil || len(o.Trail.Placement) == 0 {
				t.Errorf("%+v", o)
			}
		}},
		{"place rejected", []string{"place", "--config", placement, "--user", "olga", "--groups", "visitors"}, 1, func(t *testing.T, o *decision.Output) {
			if o.Allowed || o.Placement.Placed {
				t.Errorf("%+v", o)
			}
		}},
		{"access", []string{"access", "--config", teams, "--user", "ann", "--groups", "ml"}, 0, func(t *testing.T, o *decision.Output) {
			if len(o.Queues) != 7 || o.Queues[0].Queue != "root" || o.Identity.User != "ann" {
				t.Errorf("%+v", o)
			}
		}},
		{"app", []string{"app", "--config", teams, "--queue", "root.ml.training", "--owner", "ann", "--user", "ann", "--action", "kill"}, 0, func(t *testing.T, o *decision.Output) {
			if o.Owner != "ann" || o.Action != "kill" || len(o.Requirements) != 1 || !o.Requirements[0].Met || o.Requirements[0].Checks != nil {
				t.Errorf("%+v", o)
			}
		}},
		{"app explain", []string{"app", "--config", teams, "--queue", "root.ml.training", "--owner", "ann", "--user", "bob", "--action", "move",
			"--target-queue", "root.ml.inference", "--explain"}, 1, func(t *testing.T, o *decision.Output) {
			if o.TargetQueue != "root.ml.inference" || len(o.Requirements) != 3 || len(o.Requirements[0].Checks) == 0 {
				t.Errorf("%+v", o)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text, _, code := run(t, tt.args...)
			if code != tt.code {
				t.Fatalf("text: exit %d, want %d\n%s", code, tt.code, text)
			}
			for _, format := range []string{"json", "yaml"} {
				out, errs, code := run(t, append(tt.args, "-o", format)...)
				if code != tt.code {
					t.Fatalf("-o %s: exit %d, want %d\n%s%s", format, code, tt.code, out, errs)
				}
				doc := []byte(out)
				if format == "yaml" {
					var err error
					if doc, err = yaml.YAMLToJSON(doc); err != nil {
						t.Fatalf("-o yaml: %v\n%s", err, out)
					}
				}
				var o decision.Output
				dec := json.NewDecoder(bytes.NewReader(doc))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&o); err != nil {
					t.Fatalf("-o %s: %v\n%s", format, err, out)
				}
				var v any
				if err := json.Unmarshal(doc, &v); err != nil {
					t.Fatal(err)
				}
				if errs := schema.validate("$", v); len(errs) > 0 {
					t.Fatalf("-o %s against docs/decision.schema.json:\n%s\n%s", format, strings.Join(errs, "\n"), out)
				}
				// The answer is the text's: its first line, its second.
				lines := strings.SplitN(text, "\n", 3)
				if tt.args[0] != "place" && tt.args[0] != "access" {
					if want := map[bool]string{true: "allowed", false: "denied"}[o.Allowed]; lines[0] != want || lines[1] != o.Reason {
						t.Errorf("-o %s: allowed %v reason %q; text says %q, %q", format, o.Allowed, o.Reason, lines[0], lines[1])
					}
				}
				tt.check(t, &o)
			}
		})
	}
}

// POST /v1/access answers the object the command asking the same question
// prints with -o json: one shape, checked field by field.
func TestAccessAnswersAsTheCommand(t *testing.T) {
	schema := loadSchema(t)
	serve := func(config string) http.Handler {
		srv, err := server.New(server.Options{ConfigPath: config, Logger: slog.New(slog.DiscardHandler),
			AccessAuth: []string{server.AccessAuthNone}, WebhookAuth: server.WebhookAuthNone})
		if err != nil {
			t.Fatal(err)
		}
		return srv.Handler()
	}
	handlers := map[string]http.Handler{teams: serve(teams), placement: serve(placement)}
	for _, tt := range []struct {
		config, body string
		args         []string
	}{
		{teams, `{"queue":"root.ml.training","user":"ann","groups":["ml"]}`, []string{"check", "--queue", "root.ml.training", "--user", "ann", "--groups", "ml"}},
		{teams, `{"queue":"root.ml","user":"ann","groups":["ml"],"action":"admin","explain":true}`,
			[]string{"explain", "--queue", "root.ml", "--user", "ann", "--groups", "ml", "--action", "admin"}},
		{placement, `{"place":true,"tags":{"namespace":"spark"},"user":"alice","groups":["dev"],"explain":true}`,
			[]string{"explain", "--place", "--tag", "namespace=spark", "--user", "alice", "--groups", "dev"}},
		{placement, `{"place":true,"queue":"root.nowhere","user":"alice","groups":["dev"]}`,
			[]string{"check", "--place", "--queue", "root.nowhere", "--user", "alice", "--groups", "dev"}},
		{teams, `{"queues":true,"user":"ann","groups":["ml"]}`, []string{"access", "--user", "ann", "--groups", "ml"}},
		{teams, `{"application":{"owner":"ann","queue":"root.ml.training"},"action":"kill","user":"bob"}`,
			[]string{"app", "--queue", "root.ml.training", "--owner", "ann", "--user", "bob", "--action", "kill"}},
	} {
		t.Run(tt.args[0]+" "+tt.body, func(t *testing.T) {
			cli, _, _ := run(t, append(append(tt.args, "--config", tt.config), "-o", "json")...)
			rec := httptest.NewRecorder()
			handlers[tt.config].ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/access", strings.NewReader(tt.body)))
			var got, want any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != http.StatusOK {
				t.Fatalf("%d %v\n%s", rec.Code, err, rec.Body)
			}
			if err := json.Unmarshal([]byte(cli), &want); err != nil {
				t.Fatalf("%v\n%s", err, cli)
			}
			if errs := schema.validate("$", got); len(errs) > 0 {
				t.Fatalf("against docs/decision.schema.json:\n%s\n%s", strings.Join(errs, "\n"), rec.Body)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("/v1/access answers\n%s\nusher %s -o json prints\n%s", rec.Body, tt.args[0], cli)
			}
		})
	}
}

// The schema is exact about the Go types: a field the types do not have,
// or a required one missing, fails.
func TestDecisionSchemaRejects(t *testing.T) {
	schema := loadSchema(t)
	for _, doc := range []string{
		`{"command":"check","allowed":true,"reason":"r","partition":"default"}`,
		`{"command":"check","allowed":true,"reason":"r","partition":"default","identity":{"user":"u","groups":[]},"extra":1}`,
		`{"command":"check","allowed":"yes","reason":"r","partition":"default","identity":{"user":"u","groups":[]}}`,
		`{"command":"grant","allowed":true,"reason":"r","partition":"default","identity":{"user":"u","groups":[]}}`,
		`{"command":"explain","allowed":true,"reason":"r","partition":"default","identity":{"user":"u","groups":[]},"trail":{"acls":[{"acl":"submitacl","set":true,"reached":1,"matched":false}]}}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		if errs := schema.validate("$", v); len(errs) == 0 {
			t.Errorf("schema accepts %s", doc)
		}
	}
}

// schemaNode is the part of JSON Schema docs/decision.schema.json uses:
// type, properties, required, additionalProperties false, items, enum and
// local $ref.
type schemaNode struct {
	Ref                  string                 `json:"$ref"`
	Type                 string                 `json:"type"`
	Properties           map[string]*schemaNode `json:"properties"`
	Required             []string               `json:"required"`
	AdditionalProperties *bool                  `json:"additionalProperties"`
	Items                *schemaNode            `json:"items"`
	Enum                 []string               `json:"enum"`
	Defs                 map[string]*schemaNode `json:"$defs"`
	root                 *schemaNode
}

func loadSchema(t *testing.T) *schemaNode {
	t.Helper()
	b, err := os.ReadFile("../../../docs/decision.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s schemaNode
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	s.root = &s
	return &s
}

func (s *schemaNode) validate(path string, v any) []string {
	root := s.root
	if s.Ref != "" {
		name, ok := strings.CutPrefix(s.Ref, "#/$defs/")
		d := root.Defs[name]
		if !ok || d == nil {
			return []string{path + ": unknown $ref " + s.Ref}
		}
		d.root = root
		return d.validate(path, v)
	}
	child := func(n *schemaNode) *schemaNode { n.root = root; return n }
	var errs []string
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return []string{path + ": not an object"}
		}
		for _, r := range s.Required {
			if _, ok := m[r]; !ok {
				errs = append(errs, path+": missing "+r)
			}
		}
		for k, x := range m {
			p, ok := s.Properties[k]
			if !ok {
				if s.AdditionalProperties != nil && !*s.AdditionalProperties {
					errs = append(errs, path+": unknown field "+k)
				}
				continue
			}
			errs = append(errs, child(p).validate(path+"."+k, x)...)
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return []string{path + ": not an array"}
		}
		for i, x := range a {
			errs = append(errs, child(s.Items).validate(fmt.Sprintf("%s[%d]", path, i), x)...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return []string{path + ": not a string"}
		}
		if len(s.Enum) > 0 && !slices.Contains(s.Enum, str) {
			errs = append(errs, fmt.Sprintf("%s: %q not in %v", path, str, s.Enum))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return []string{path + ": not a boolean"}
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != float64(int64(f)) {
			return []string{path + ": not an integer"}
		}
	default:
		errs = append(errs, path+": schema type "+s.Type+" not supported by this checker")
	}
	return errs
}

// Every decision command's --help documents -o and its formats.
func TestDecisionHelpDocumentsOutput(t *testing.T) {
	for _, cmd := range []string{"check", "explain", "place", "access", "app"} {
		out, errs, code := run(t, cmd, "--help")
		if code != 0 || errs != "" || !strings.Contains(out, "-o, --output FORMAT") ||
			!strings.Contains(out, "text, json or yaml") || !strings.Contains(out, "docs/decision.schema.json") {
			t.Errorf("%s --help (exit %d) does not document -o on stdout:\n%s\nstderr: %s", cmd, code, out, errs)
		}
	}
}
