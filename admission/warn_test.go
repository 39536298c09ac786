package admission

import (
	"errors"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/usherhq/usher/admission/settings"
)

// auditSink collects the audit records of a handler.
type auditSink struct {
	mu   sync.Mutex
	recs []Record
}

func (s *auditSink) hook(r Record) { s.mu.Lock(); s.recs = append(s.recs, r); s.mu.Unlock() }

func (s *auditSink) last(t *testing.T) Record {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.recs) == 0 {
		t.Fatal("no audit record")
	}
	return s.recs[len(s.recs)-1]
}

// TestWarnModeQueue: with enforceQueueACLsMode warn, a CREATE to a queue
// the submitter may not use is admitted on both webhooks, stamped as
// always, with the message deny mode refuses it with as the admission
// warning, and an audit record marked warned; for every kind.
func TestWarnModeQueue(t *testing.T) {
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.team-a", ""}}}
	labels := m("queue", "root.team-a")
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			deny := enforcing(t, settings.Config{}, authz)
			sink := &auditSink{}
			warn := NewHandler(mustCompile(t, settings.Config{EnforceQueueACLs: true, EnforceQueueACLsMode: settings.ModeWarn}), WithAuthorizer(authz), WithAudit(sink.hook))
			req := request(t, kc, admissionv1.Create, "team-a", bob, kc.build(labels, nil, nil), nil)

			denied := run(t, deny, hookMutate, req)
			wantDenied(t, denied, 403, `user "bob" may not submit to queue "root.team-a"`)

			resp := run(t, warn, hookMutate, req)
			wantAllowed(t, resp)
			if len(resp.Warnings) != 1 || resp.Warnings[0] != denied.Result.Message {
				t.Fatalf("warnings %q, want exactly the denial %q", resp.Warnings, denied.Result.Message)
			}
			if got := patched(t, kc, req, resp)[UserInfoAnnotation]; !strings.Contains(got, `"user":"bob"`) {
				t.Fatalf("warn mode must still stamp the submitter: user.info %q", got)
			}
			rec := sink.last(t)
			if !rec.Warned || !rec.Allowed || rec.Queue != "root.team-a" || rec.Reason != "warned: "+denied.Result.Message {
				t.Fatalf("audit record %+v, want a warned denial of root.team-a", rec)
			}

			// The validating webhook sees the stamped object: warned too.
			req.Object.Raw, _ = applyPatch(req.Object.Raw, resp.Patch)
			wantDenied(t, run(t, deny, hookValidate, req), 403, denied.Result.Message)
			resp = run(t, warn, hookValidate, req)
			wantAllowed(t, resp)
			if len(resp.Warnings) != 1 || resp.Warnings[0] != denied.Result.Message {
				t.Fatalf("validate: warnings %q", resp.Warnings)
			}

			// Allowed requests carry no warning and no mark.
			ok := request(t, kc, admissionv1.Create, "team-a", alice, kc.build(labels, nil, nil), nil)
			if resp := run(t, warn, hookMutate, ok); !resp.Allowed || len(resp.Warnings) != 0 || sink.last(t).Warned {
				t.Fatalf("alice: allowed %v warnings %q warned %v", resp.Allowed, resp.Warnings, sink.last(t).Warned)
			}
		})
	}
}

// TestWarnModeNeverForIdentity: warn mode covers the queue check and the
// kill rule only. A forged user.info is denied, and so is a review usher
// cannot decide (no authorizer: usher fails closed).
func TestWarnModeNeverForIdentity(t *testing.T) {
	c := settings.Config{EnforceQueueACLs: true, EnforceQueueACLsMode: settings.ModeWarn, EnforceDeleteACLsMode: settings.ModeWarn}
	authz := &fakeAuthz{allowed: map[string][]string{alice.Username: {"root.team-a", ""}}}
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			h := NewHandler(mustCompile(t, c), WithAuthorizer(authz))
			forged := request(t, kc, admissionv1.Create, "team-a", bob, kc.build(nil, m(UserInfoAnnotation, forgedCarol), nil), nil)
			for _, hook := range []hookKind{hookMutate, hookValidate} {
				if resp := run(t, h, hook, forged); resp.Allowed {
					t.Fatalf("%v: forged user.info admitted in warn mode (warnings %q)", hook, resp.Warnings)
				}
			}
			noAuthz := NewHandler(mustCompile(t, c))
			req := request(t, kc, admissionv1.Create, "team-a", bob, kc.build(nil, nil, nil), nil)
			wantDenied(t, run(t, noAuthz, hookMutate, req), 500, "no queue authorizer")
		})
	}
}

// TestWarnModeDelete: with enforceDeleteACLsMode warn, a DELETE the kill
// rule refuses is admitted with the refusal as the warning and the rule
// RuleWarnedDelete in the audit record; an authorizer error still denies.
func TestWarnModeDelete(t *testing.T) {
	authz := newFakeDeleteAuthz()
	ann := m(UserInfoAnnotation, aliceInfo)
	labels := m("queue", "root.team-a")
	for _, kc := range kindCases {
		t.Run(kc.kind, func(t *testing.T) {
			deny := deleteHandler(t, settings.Config{}, authz)
			sink := &auditSink{}
			warn := deleteHandler(t, settings.Config{EnforceDeleteACLsMode: settings.ModeWarn}, authz, WithAudit(sink.hook))
			req := deleteRequest(t, kc, "team-a", bob, kc.build(labels, ann, nil))
			denied := run(t, deny, hookValidate, req)
			wantDenied(t, denied, 403, `usher: user "bob" may not delete`)
			resp := run(t, warn, hookValidate, req)
			wantAllowed(t, resp)
			if len(resp.Warnings) != 1 || resp.Warnings[0] != denied.Result.Message {
				t.Fatalf("warnings %q, want %q", resp.Warnings, denied.Result.Message)
			}
			if rec := sink.last(t); !rec.Warned || rec.Rule != RuleWarnedDelete || rec.Identity != alice.Username || rec.Queue != "root.team-a" {
				t.Fatalf("audit record %+v", rec)
			}
			failing := newFakeDeleteAuthz()
			failing.err = errors.New("directory down")
			broken := deleteHandler(t, settings.Config{EnforceDeleteACLsMode: settings.ModeWarn}, failing)
			wantDenied(t, run(t, broken, hookValidate, req), 500, "directory down")
		})
	}
}

// TestWarnModeSetting: the modes are deny (default) and warn, from the
// YAML file and the ConfigMap keys; anything else is an error naming the
// setting.
func TestWarnModeSetting(t *testing.T) {
	cm, err := settings.FromConfigMap(map[string]string{
		"admissionController.enforceQueueACLsMode":  " warn ",
		"admissionController.enforceDeleteACLsMode": "deny",
	})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := cm.Compile()
	if err != nil || !cc.QueueWarn || cc.DeleteWarn {
		t.Fatalf("compiled %+v, %v", cc, err)
	}
	_, err = settings.Config{EnforceQueueACLsMode: "audit", EnforceDeleteACLsMode: "Warn"}.Compile()
	for _, want := range []string{`admissionController.enforceQueueACLsMode`, `"audit" is not a mode: want deny or warn`, `admissionController.enforceDeleteACLsMode`, `"Warn" is not a mode`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not contain %q", err, want)
		}
	}
}
