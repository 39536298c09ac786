package cli_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/usherhq/usher/admission"
)

// TestAdmissionDenialSchema: the admission denial's stable shape
// (admission.Denial, the annotation usher.io/denial of a denial Event and
// the audit record's "denial") round-trips through
// docs/decision.schema.json's $defs/admissionDenial: every cause, with
// every field set and with only the required ones, validates, decodes
// back into the Go type without unknown fields and compares equal; the
// schema's closed set of reasons is exactly admission.Causes(); and the
// schema refuses an unknown reason, an unknown check, an unknown field and
// a missing required one.
func TestAdmissionDenialSchema(t *testing.T) {
	schema := loadSchema(t)
	def := schema.Defs["admissionDenial"]
	if def == nil {
		t.Fatal("docs/decision.schema.json has no $defs/admissionDenial")
	}
	var enum []string
	for _, c := range admission.Causes() {
		enum = append(enum, string(c))
	}
	if !slices.Equal(def.Properties["reason"].Enum, enum) {
		t.Fatalf("schema reasons %v, want admission.Causes() %v", def.Properties["reason"].Enum, enum)
	}
	if !slices.Equal(def.Properties["check"].Enum, []string{admission.CheckSubmit, admission.CheckKill}) {
		t.Fatalf("schema checks %v", def.Properties["check"].Enum)
	}
	ref := &schemaNode{Ref: "#/$defs/admissionDenial", root: schema}
	var shapes []admission.Denial
	for _, c := range admission.Causes() {
		shapes = append(shapes,
			admission.Denial{Reason: c, Message: "usher: no", Code: 403, User: "alice"},
			admission.Denial{Reason: c, Message: `usher: user "alice" may not submit to queue "root.ops"`, Code: 200, Warned: true,
				Operation: "CREATE", Group: "batch", Kind: "Job", Namespace: "team-a", Name: "spark-*", User: "alice",
				Identity: "alice", Queue: "root.ops", Check: admission.CheckSubmit, Field: "spec.template.metadata.labels[queue]", DryRun: true})
	}
	for _, d := range shapes {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		if errs := ref.validate("$", v); len(errs) > 0 {
			t.Fatalf("%s against $defs/admissionDenial: %v", b, errs)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		var back admission.Denial
		if err := dec.Decode(&back); err != nil || back != d {
			t.Fatalf("%s decodes to %+v (%v)", b, back, err)
		}
	}
	for _, bad := range []string{
		`{"reason":"Nope","message":"m","code":403,"user":"u"}`,
		`{"reason":"KillDenied","message":"m","code":403,"user":"u","check":"delete"}`,
		`{"reason":"KillDenied","message":"m","code":403,"user":"u","extra":1}`,
		`{"reason":"KillDenied","message":"m","code":403}`,
	} {
		var v any
		if err := json.Unmarshal([]byte(bad), &v); err != nil {
			t.Fatal(err)
		}
		if errs := ref.validate("$", v); len(errs) == 0 {
			t.Errorf("schema accepts %s", bad)
		}
	}
}
