package admission

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/usherhq/usher/admission/settings"
)

// schedulerUserInfo is shaped like YuniKorn's si.UserGroupInformation, which
// its shim fills from the user.info annotation with encoding/json
// (utils.GetUserFromPod): on an error it runs the pod as "nobody", and an
// empty user is "nobody" too.
type schedulerUserInfo struct {
	User   string   `json:"user,omitempty"`
	Groups []string `json:"groups,omitempty"`
}

// schedulerReads decodes s as the scheduler does.
func schedulerReads(s string) (schedulerUserInfo, error) {
	var u schedulerUserInfo
	err := json.Unmarshal([]byte(s), &u)
	return u, err
}

// Attacks on the user.info annotation: alice (alice@EXAMPLE.COM, groups
// dev.team and system:authenticated) names herself where an exact reader
// looks, and someone else where the scheduler's case-insensitive,
// last-match-wins reader looks. Each class of member name is one case.
var userInfoAttacks = []struct {
	name, value string
	member      string // what the denial must name
}{
	{"ASCII case User", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"User":"carol"}`, `"User"`},
	{"ASCII case USER", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"USER":"carol"}`, `"USER"`},
	{"ASCII case Groups", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"Groups":["admins"]}`, `"Groups"`},
	{"ASCII case gROUPS alone", `{"user":"alice@EXAMPLE.COM","gROUPS":["admins"]}`, `"gROUPS"`},
	{"Unicode fold long s in user", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"uſer":"carol"}`, `"uſer"`},
	{"Unicode fold long s in groups", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"groupſ":["admins"]}`, `"groupſ"`},
	{"Unicode fold and ASCII case", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"UſER":"carol"}`, `"UſER"`},
	{"escaped case fold", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"\u0055ser":"carol"}`, `"\u0055ser"`},
	{"escaped long s", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"u\u017fer":"carol"}`, `"u\u017fer"`},
	{"escaped exact name", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"\u0075ser":"carol"}`, `"\u0075ser"`},
	{"escaped exact name alone", `{"\u0075ser":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"]}`, `"\u0075ser"`},
	{"duplicate user", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"user":"carol"}`, `duplicate member "user"`},
	{"duplicate groups", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"groups":["admins"]}`, `duplicate member "groups"`},
	{"extra member", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"extra":{"x":[1]}}`, `"extra"`},
	{"kelvin sign member", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"Kind":"x"}`, `"Kind"`},
	{"empty member name", `{"user":"alice@EXAMPLE.COM","groups":["dev.team","system:authenticated"],"":"carol"}`, `member ""`},
}

// TestParseUserInfoRefusesAmbiguousMembers: every member other than the
// exact "user" and "groups" is refused and named, whatever the scheduler
// would make of it; the test also shows, for the fold classes, that the
// scheduler's reading is not the submitter's.
func TestParseUserInfoRefusesAmbiguousMembers(t *testing.T) {
	for _, tc := range userInfoAttacks {
		t.Run(tc.name, func(t *testing.T) {
			if u, err := ParseUserInfo(tc.value); err == nil {
				sched, serr := schedulerReads(tc.value)
				t.Fatalf("accepted as %+v; the scheduler reads %+v (%v)", u, sched, serr)
			} else if !strings.Contains(err.Error(), tc.member) {
				t.Fatalf("error %q does not name %s", err, tc.member)
			}
		})
	}
	// The fold classes really are read as someone else by the scheduler.
	for _, tc := range userInfoAttacks[:10] {
		sched, err := schedulerReads(tc.value)
		if err != nil || sched.User == "alice@EXAMPLE.COM" && slices.Equal(sched.Groups, []string{"dev.team", "system:authenticated"}) {
			t.Errorf("%s: the scheduler reads %+v (%v): not an attack", tc.name, sched, err)
		}
	}
}

// TestParseUserInfoRefusesDivergentValues: values whose reading depends on
// how a decoder treats bad UTF-8, lone surrogates, types or trailing data
// are refused; what is accepted (control characters and U+FFFD included,
// which the API server may authenticate) reads the same for the scheduler.
func TestParseUserInfoRefusesDivergentValues(t *testing.T) {
	bad := []struct{ value, want string }{
		{"{\"user\":\"al\xffice\"}", "not valid UTF-8"},
		{"{\"user\":\"alice\",\"groups\":[\"a\xc0\"]}", "not valid UTF-8"},
		{"{\"us\xffer\":\"alice\"}", "not valid UTF-8"},
		{`{"user":"al\ud800ice"}`, `half a UTF-16 surrogate pair`},
		{`{"user":"alice","groups":["\udc00"]}`, `half a UTF-16 surrogate pair`},
		{`{"user":"alice","groups":["\ud83d\u0041"]}`, `half a UTF-16 surrogate pair`},
		{`{"user":"alice","groups":["\ud83d"]}`, `half a UTF-16 surrogate pair`},
		{`{"user":"alice"} {"user":"carol"}`, "unexpected data after the top-level value"},
		{`{"user":"alice"}x`, "unexpected data"},
		{`{"user":"alice","groups":[1]}`, "want a string"},
		{`{"user":"alice","groups":[null]}`, `"groups"[0] is empty`},
		{`{"user":"alice","groups":[["x"]]}`, "want a string"},
		{`{"user":"alice","groups":{"a":"b"}}`, "want an array"},
		{`{"user":["alice"]}`, "want a string"},
		{`{"user":null}`, `"user" is missing or empty`},
		{`null`, "not a JSON object"},
		{`["alice"]`, "not a JSON object"},
		{"\ufeff{\"user\":\"alice\"}", "not a JSON object"},
		{`{"user":"alice","x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, `member "x"`},
	}
	for _, b := range bad {
		t.Run(b.want, func(t *testing.T) {
			if u, err := ParseUserInfo(b.value); err == nil {
				t.Fatalf("%q accepted as %+v", b.value, u)
			} else if !strings.Contains(err.Error(), b.want) {
				t.Fatalf("%q: error %q, want %q", b.value, err, b.want)
			}
		})
	}
	// What stays accepted reads the same for the scheduler.
	good := []string{
		`{"user":"alice"}`,
		` { "groups" : null , "user" : "alice" } `,
		`{"user":"alice","groups":[]}`,
		`{"user":"al\u0069ce","groups":["d\u00e9v","\ud83d\ude00"]}`,
		`{"user":"système","groups":["dev.team","system:serviceaccounts:spark"]}`,
		`{"user":"a\"b\\c\/d"}`,
		`{"user":"a\\ud800"}`,
		`{"user":"alice\ufffd","groups":["\u0000","a\tb","\u0085","\u2028"]}`,
	}
	for _, s := range good {
		u, err := ParseUserInfo(s)
		if err != nil {
			t.Errorf("%s refused: %v", s, err)
			continue
		}
		checkSameReading(t, s, u)
	}
}

// checkSameReading fails unless the scheduler reads s as u.
func checkSameReading(t *testing.T, s string, u UserInfo) {
	t.Helper()
	sched, err := schedulerReads(s)
	if err != nil {
		t.Fatalf("usher accepts %q as %+v, the scheduler cannot decode it: %v", s, u, err)
	}
	if sched.User != u.User || !slices.Equal(sched.Groups, u.Groups) && !(len(sched.Groups) == 0 && len(u.Groups) == 0) {
		t.Fatalf("usher reads %q as %+v, the scheduler as %+v", s, u, sched)
	}
}

// FuzzUserInfoDifferential: every annotation ParseUserInfo accepts is read
// as the same user and groups by encoding/json into a struct shaped like
// YuniKorn's si.UserGroupInformation, and by a strict decoder that knows no
// other member; and what it accepts it prints back unchanged in meaning.
// The seed corpus (testdata/fuzz/FuzzUserInfoDifferential) holds the fold
// classes, escapes, duplicates and bad UTF-8; go test runs it as a test.
func FuzzUserInfoDifferential(f *testing.F) {
	for _, tc := range userInfoAttacks {
		f.Add(tc.value)
	}
	f.Add(aliceInfo)
	f.Add(`{"user":"alice","groups":null}`)
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUserInfo(s)
		if err != nil {
			return
		}
		checkSameReading(t, s, u)
		d := json.NewDecoder(strings.NewReader(s))
		d.DisallowUnknownFields()
		var strict UserInfo
		if err := d.Decode(&strict); err != nil || strict.User != u.User || !slices.Equal(strict.Groups, u.Groups) {
			t.Fatalf("usher reads %q as %+v, a strict decoder as %+v (%v)", s, u, strict, err)
		}
		back, err := ParseUserInfo(u.String())
		if err != nil || back.User != u.User || len(back.Groups) != len(u.Groups) || len(u.Groups) > 0 && !slices.Equal(back.Groups, u.Groups) {
			t.Fatalf("%q: printed as %q, read back as %+v (%v)", s, u.String(), back, err)
		}
	})
}

// TestUserInfoAttacksEveryKind: the attacks through the real handler, on
// a pod and on the pod template of every workload kind. On CREATE they are
// denied whoever submits them: the user naming herself where usher looked,
// a trusted controller copying such a template, a trusted external user,
// and with bypassAuth. On UPDATE, introducing one is denied and the denial
// names the member.
func TestUserInfoAttacksEveryKind(t *testing.T) {
	external := settings.Config{AccessControl: settings.AccessControl{ExternalUsers: settings.Patterns{"^system:serviceaccount:airflow:scheduler$"}}}
	bypass := settings.Config{AccessControl: settings.AccessControl{BypassAuth: true}}
	submitters := []struct {
		name string
		cfg  settings.Config
		user authenticationv1.UserInfo
	}{
		{"submitter naming itself", settings.Config{}, alice},
		{"trusted controller", settings.Config{}, rsCtrl},
		{"shared controller manager", settings.Config{}, kcm},
		{"external user", external, airflow},
		{"bypassAuth", bypass, alice},
	}
	for _, kc := range kindCases {
		for _, tc := range userInfoAttacks {
			for _, sub := range submitters {
				t.Run(kc.kind+"/"+tc.name+"/"+sub.name, func(t *testing.T) {
					h := NewHandler(mustCompile(t, sub.cfg))
					req := request(t, kc, admissionv1.Create, "team-a", sub.user, kc.build(nil, m(UserInfoAnnotation, tc.value), nil), nil)
					for _, hook := range []hookKind{hookMutate, hookValidate} {
						wantDenied(t, run(t, h, hook, req), 400, "annotation "+UserInfoAnnotation, "is not valid", tc.member)
					}
				})
			}
			t.Run(kc.kind+"/"+tc.name+"/update", func(t *testing.T) {
				old := kc.build(nil, m(UserInfoAnnotation, aliceInfo), nil)
				for _, who := range []authenticationv1.UserInfo{alice, rsCtrl} {
					h := NewHandler(nil)
					req := request(t, kc, admissionv1.Update, "team-a", who, kc.build(nil, m(UserInfoAnnotation, tc.value), nil), old)
					for _, hook := range []hookKind{hookMutate, hookValidate} {
						wantDenied(t, run(t, h, hook, req), 403, "may not change annotation "+UserInfoAnnotation, "not valid either", tc.member)
					}
				}
			})
		}
	}
}

// TestStampedIdentityIsAccepted: whatever identity the API server
// authenticates, the annotation usher stamps is accepted again when a
// controller copies it into the objects it makes, and reads the same for
// the scheduler; otherwise a workload's pods would be refused.
func TestStampedIdentityIsAccepted(t *testing.T) {
	names := []string{"alice", "system:serviceaccount:spark:driver", "a\tb", "\x00", "\u0085", "\ufffd", "\u2028é",
		`o"dd\user<&>`, "\U0001F600", "K", "ſ", "User"}
	for _, user := range names {
		for _, groups := range [][]string{nil, {}, names} {
			s := UserInfo{User: user, Groups: groups}.String()
			u, err := ParseUserInfo(s)
			if err != nil {
				t.Fatalf("usher stamps %q and refuses it: %v", s, err)
			}
			if u.User != user || len(u.Groups) != len(groups) || len(groups) > 0 && !slices.Equal(u.Groups, groups) {
				t.Fatalf("%q read back as %+v", s, u)
			}
			checkSameReading(t, s, u)
		}
	}
}

// BenchmarkParseUserInfo: the annotation a controller copies into every
// pod it makes, parsed on each such CREATE.
func BenchmarkParseUserInfo(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseUserInfo(aliceInfo); err != nil {
			b.Fatal(err)
		}
	}
}
