package acl

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

type who struct {
	user   string
	groups []string
}

var (
	sue  = who{"sue", nil}
	john = who{"john", []string{"dev"}}
	bob  = who{"bob", []string{"test"}}
)

func check(t *testing.T, a ACL, w who) Match {
	t.Helper()
	s := NewSubject(w.user, w.groups)
	m := a.Match(s)
	if got := a.Allows(s); got != m.Allowed() {
		t.Fatalf("Allows(%s)=%v but Match=%+v", w.user, got, m)
	}
	return m
}

// The stories of the YuniKorn ACL page (the YuniKorn user guide's ACL page).
func TestYuniKornACLPageStories(t *testing.T) {
	tests := []struct {
		acl     string
		who     who
		allowed bool
		kind    Kind
		name    string
	}{
		{"sue", sue, true, MatchUser, "sue"},
		{"sue", john, false, None, ""},
		{"sue", bob, false, None, ""},
		{"sue dev", sue, true, MatchUser, "sue"},
		{"sue dev", john, true, MatchGroup, "dev"},
		{"sue dev", bob, false, None, ""},
		{" dev,test", sue, false, None, ""},
		{" dev,test", john, true, MatchGroup, "dev"},
		{" dev,test", bob, true, MatchGroup, "test"},
		{"sue dev,test", bob, true, MatchGroup, "test"},
		{"*", bob, true, MatchWildcard, "*"},
		{"", sue, false, None, ""},
		{" ", sue, false, None, ""},
		{" product", who{"ann", []string{"product"}}, true, MatchGroup, "product"},
	}
	for _, d := range []Dialect{YuniKorn, YARN} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%q/%s", d, tt.acl, tt.who.user), func(t *testing.T) {
				a, warns, err := Parse(tt.acl, d)
				if err != nil || len(warns) != 0 {
					t.Fatalf("Parse(%q): %v %v", tt.acl, err, warns)
				}
				m := check(t, a, tt.who)
				if m.Allowed() != tt.allowed || m.Kind != tt.kind || m.Name != tt.name {
					t.Fatalf("got %+v, want allowed=%v kind=%v name=%q", m, tt.allowed, tt.kind, tt.name)
				}
			})
		}
	}
}

// The examples of the YARN ACL page ("Managing YARN ACLs").
func TestYARNGuideExamples(t *testing.T) {
	groups := func(g ...string) []string { return g }
	tests := []struct {
		acl     string
		who     who
		allowed bool
	}{
		{"fred,alice,haley datascience,marketing,support", who{"alice", nil}, true},
		{"fred,alice,haley datascience,marketing,support", who{"haley", groups("x")}, true},
		{"fred,alice,haley datascience,marketing,support", who{"zed", groups("support")}, true},
		{"fred,alice,haley datascience,marketing,support", who{"zed", groups("hr")}, false},
		{" my_group", who{"my_group", nil}, false}, // groups only: a user named like the group gets nothing
		{" my_group", who{"x", groups("my_group")}, true},
		{"*", who{"anyone", nil}, true},
		{"john,jane HR", who{"jane", nil}, true},
		{"john,jane HR", who{"hank", groups("HR")}, true},
		{"john,jane HR", who{"hank", groups("hr")}, false}, // case sensitive
		{"NOUSERS NOGROUPS", who{"john", groups("dev")}, false},
		{" ", who{"john", groups("dev")}, false},
		{"user1,user2,userN", who{"user2", nil}, true},
		{" HR,marketing,support", who{"x", groups("marketing")}, true},
		{"hadoopadmin yarnadmgroup,hadoopadmgroup", who{"y", groups("hadoopadmgroup")}, true},
	}
	for i := 1; i <= 6; i++ {
		tests = append(tests, struct {
			acl     string
			who     who
			allowed bool
		}{" group_1,group_2,group_3,group_4,group_5", who{"u", groups(fmt.Sprintf("group_%d", i))}, i <= 5})
	}
	for _, d := range []Dialect{YuniKorn, YARN} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/%q/%s%v", d, tt.acl, tt.who.user, tt.who.groups), func(t *testing.T) {
				a, _, err := Parse(tt.acl, d)
				if err != nil {
					t.Fatal(err)
				}
				if m := check(t, a, tt.who); m.Allowed() != tt.allowed {
					t.Fatalf("got %+v, want allowed=%v", m, tt.allowed)
				}
			})
		}
	}
}

// Spark keeps users and groups in separate properties.
func TestSpark(t *testing.T) {
	tests := []struct {
		users, groups string
		who           who
		allowed       bool
		warns         int
	}{
		{"fred, alice ,haley", "datascience,marketing", who{"alice", nil}, true, 0},
		{"fred", " datascience , marketing", who{"x", []string{"marketing"}}, true, 0},
		{"*", "", who{"x", nil}, true, 0},
		{"", "*", who{"x", nil}, true, 0},
		{" ", " ", who{"x", []string{"y"}}, false, 0},
		{"", "", who{"x", nil}, false, 0},
		{"a,,b", "", who{"b", nil}, true, 1},
		{"a,a", "", who{"a", nil}, true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.users+"|"+tt.groups, func(t *testing.T) {
			a, warns, err := ParseSpark(tt.users, tt.groups)
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != tt.warns {
				t.Fatalf("warnings %v, want %d", warns, tt.warns)
			}
			if m := check(t, a, tt.who); m.Allowed() != tt.allowed {
				t.Fatalf("got %+v want %v", m, tt.allowed)
			}
		})
	}
	_, _, err := ParseSpark("al ice", "")
	var se *SyntaxError
	if !errors.As(err, &se) || se.List != "users" || se.Offset != 0 {
		t.Fatalf("ParseSpark(\"al ice\"): %v", err)
	}
	_, _, err = ParseSpark("", "ok,b*d")
	if !errors.As(err, &se) || se.List != "groups" || se.Offset != 3 {
		t.Fatalf("ParseSpark groups b*d: %#v", err)
	}
}

func TestDialectsOnMalformedInput(t *testing.T) {
	// YuniKorn rejects a second space and says where it is.
	_, _, err := Parse("u1  g1", YuniKorn)
	var se *SyntaxError
	if !errors.As(err, &se) || se.Offset != 3 {
		t.Fatalf("yunikorn %q: %v", "u1  g1", err)
	}
	_, _, err = Parse("sue dev test", YuniKorn)
	if !errors.As(err, &se) || se.Offset != 7 || !strings.Contains(se.Msg, "more than one space") {
		t.Fatalf("yunikorn: %v", err)
	}
	// YARN ignores what follows the second space, and says so.
	a, warns, err := Parse("sue dev test", YARN)
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 1 || warns[0].Offset != 7 || warns[0].Kind != Ignored || !strings.Contains(warns[0].Msg, `" test"`) {
		t.Fatalf("yarn warnings: %v", warns)
	}
	if got := a.String(); got != "sue dev" {
		t.Fatalf("yarn kept %q", got)
	}
	if check(t, a, who{"x", []string{"test"}}).Allowed() {
		t.Fatal("yarn: group after the second space must not grant")
	}
	// YARN treats a padded wildcard as the wildcard; YuniKorn is exact.
	if a, _, _ := Parse(" * ", YARN); !a.All() {
		t.Fatal(`yarn " * " should be the wildcard`)
	}
	if _, _, err := Parse("sue", Spark); err == nil {
		t.Fatal("Parse with the spark dialect must point to ParseSpark")
	}
}

func TestKubernetesNames(t *testing.T) {
	names := []string{
		"system:serviceaccount:spark:driver",
		"system:authenticated",
		"system:serviceaccounts:kube-system",
		"dev.team",
		"john.doe@EXAMPLE.COM",
		"https://issuer.example.com#alice",
		"ÉQUIPE-données",
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			for _, text := range []string{n, " " + n, "someone " + n} {
				a, warns, err := Parse(text, YuniKorn)
				if err != nil || len(warns) > 0 {
					t.Fatalf("Parse(%q): %v %v", text, err, warns)
				}
				asUser := check(t, a, who{n, nil})
				asGroup := check(t, a, who{"nobody", []string{"x", n}})
				isUsers := !strings.Contains(text, " ")
				if asUser.Allowed() != isUsers || asGroup.Allowed() == isUsers {
					t.Fatalf("%q: as user %+v, as group %+v", text, asUser, asGroup)
				}
			}
		})
	}
}

func TestInvalidNamesArePositionedErrors(t *testing.T) {
	tests := []struct {
		text   string
		offset int
		msg    string
	}{
		{"alice,b*b", 6, "wildcard"},
		{"alice,bob\tx", 6, "whitespace"},
		{"alice dev,o\x01ps", 10, "control"},
		{"al\u00a0ice", 0, "whitespace"},
		{"ok \xff", 3, "UTF-8"},
		{strings.Repeat("x", MaxNameLen+1), 0, "longer"},
	}
	for _, tt := range tests {
		t.Run(tt.text[:min(len(tt.text), 12)], func(t *testing.T) {
			for _, d := range []Dialect{YuniKorn, YARN} {
				_, _, err := Parse(tt.text, d)
				var se *SyntaxError
				if !errors.As(err, &se) || se.Offset != tt.offset || !strings.Contains(se.Msg, tt.msg) {
					t.Fatalf("%s: got %v, want offset %d and %q", d, err, tt.offset, tt.msg)
				}
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		text   string
		offset int
		kind   WarningKind
		msg    string
		allows who
	}{
		{"alice,,bob", 6, Empty, "empty user entry", who{"bob", nil}},
		{"alice,*", 6, NotWildcard, `"*" mixed with users`, who{"alice", nil}},
		{"alice dev,*", 10, NotWildcard, `"*" mixed with groups`, who{"x", []string{"dev"}}},
		{"alice,alice", 6, Duplicate, `duplicate user "alice"`, who{"alice", nil}},
		{"alice,", 6, Empty, "empty user entry", who{"alice", nil}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			a, warns, err := Parse(tt.text, YuniKorn)
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) != 1 || warns[0].Offset != tt.offset || warns[0].Kind != tt.kind || !strings.Contains(warns[0].Msg, tt.msg) {
				t.Fatalf("warnings %v, want offset %d kind %d %q", warns, tt.offset, tt.kind, tt.msg)
			}
			if !check(t, a, tt.allows).Allowed() {
				t.Fatal("expected the valid entries to keep working")
			}
			if check(t, a, who{"mallory", []string{"evil"}}).Allowed() {
				t.Fatal(`"*" mixed with names must not allow everyone`)
			}
		})
	}
	// A whole list of "*" is the wildcard, as in YuniKorn and YARN.
	for _, text := range []string{"* dev", " *"} {
		if a := MustParse(text); !a.All() {
			t.Errorf("%q should be the wildcard", text)
		}
	}
}

func TestCanonicalForm(t *testing.T) {
	tests := map[string]string{
		"*":                "*",
		"":                 " ",
		" ":                " ",
		"sue":              "sue",
		"sue dev,test":     "sue dev,test",
		" dev":             " dev",
		"a,b,a,,c x,x":     "a,b,c x",
		"* dev":            "*",
		"sue ":             "sue",
		"alice,* dev,ops":  "alice dev,ops",
		"system:x:y dev.t": "system:x:y dev.t",
	}
	for in, want := range tests {
		a := MustParse(in)
		if got := a.String(); got != want {
			t.Errorf("String(Parse(%q)) = %q, want %q", in, got, want)
		}
		b := MustParse(a.String())
		if !a.Equal(&b) {
			t.Errorf("round trip of %q: %q != %q", in, a.String(), b.String())
		}
	}
	x, y := MustParse("a,b g,h"), MustParse("b,a h,g")
	if !x.Equal(&y) {
		t.Error("order of entries must not matter to Equal")
	}
	z := MustParse("a,b g")
	if x.Equal(&z) {
		t.Error("different group sets must not be equal")
	}
}

// Round trip property: for random ACLs, printing and parsing gives an equal
// ACL that decides every subject the same way.
func TestRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "dev", "system:authenticated", "x.y", "u@EX.COM", "sa:ns:name", "Ä"}
	pick := func() []string {
		var out []string
		for range r.IntN(5) {
			out = append(out, alphabet[r.IntN(len(alphabet))])
		}
		return out
	}
	for i := range 2000 {
		users, groups := pick(), pick()
		text := strings.Join(users, ",")
		if len(groups) > 0 || r.IntN(3) == 0 {
			text += " " + strings.Join(groups, ",")
		}
		if r.IntN(20) == 0 {
			text = "*"
		}
		a, _, err := Parse(text, YuniKorn)
		if err != nil {
			t.Fatalf("#%d Parse(%q): %v", i, text, err)
		}
		b, warns, err := Parse(a.String(), YuniKorn)
		if err != nil || len(warns) != 0 {
			t.Fatalf("#%d canonical %q: %v %v", i, a.String(), err, warns)
		}
		if !a.Equal(&b) || a.String() != b.String() {
			t.Fatalf("#%d %q -> %q -> %q", i, text, a.String(), b.String())
		}
		sub := NewSubject(alphabet[r.IntN(len(alphabet))], pick())
		if a.Allows(sub) != b.Allows(sub) || a.Match(sub) != b.Match(sub) {
			t.Fatalf("#%d %q decides differently after a round trip", i, text)
		}
	}
}

func TestNew(t *testing.T) {
	a, err := New([]string{"system:serviceaccount:spark:driver"}, []string{"dev.team"})
	if err != nil {
		t.Fatal(err)
	}
	if !check(t, a, who{"x", []string{"dev.team"}}).Allowed() {
		t.Fatal("group entry not honoured")
	}
	if a, _ := New([]string{"*"}, nil); !a.All() {
		t.Fatal(`["*"] should be the wildcard`)
	}
	_, err = New([]string{"ok", "not ok"}, nil)
	var se *SyntaxError
	if !errors.As(err, &se) || se.List != "users" || se.Offset != 1 {
		t.Fatalf("New with a bad name: %v", err)
	}
	var zero ACL
	if !zero.Empty() || zero.Allows(NewSubject("a", []string{"a"})) {
		t.Fatal("the zero ACL must allow nobody")
	}
}

// Within one ACL: wildcard, then user, then the first listed group.
func TestCheckOrder(t *testing.T) {
	a := MustParse("alice ops,dev")
	m := a.Match(NewSubject("alice", []string{"dev", "ops"}))
	if m.Kind != MatchUser {
		t.Fatalf("user before groups: %+v", m)
	}
	m = a.Match(NewSubject("bob", []string{"dev", "ops"}))
	if m.Kind != MatchGroup || m.Name != "ops" || m.Index != 0 {
		t.Fatalf("first listed group: %+v", m)
	}
	var none Set
	if none.Allows(NewSubject("a", nil)) || none.Match(NewSubject("a", nil)).Allowed() {
		t.Fatal("the zero Set allows nobody")
	}
}

func TestManyGroups(t *testing.T) {
	// Both search directions: a long ACL and a short subject, and the reverse.
	var long []string
	for i := range 500 {
		long = append(long, fmt.Sprintf("g%d", i))
	}
	a := MustParse(" " + strings.Join(long, ","))
	if !check(t, a, who{"u", []string{"zz", "g499"}}).Allowed() {
		t.Fatal("long ACL, short subject")
	}
	if m := check(t, a, who{"u", []string{"g400", "g3"}}); m.Name != "g3" || m.Index != 3 {
		t.Fatalf("long ACL: the first listed group decides: %+v", m)
	}
	b := MustParse(" g250")
	if m := check(t, b, who{"u", long}); m.Name != "g250" {
		t.Fatalf("short ACL, long subject: %+v", m)
	}
	if check(t, b, who{"u", long[:250]}).Allowed() {
		t.Fatal("g250 is not in the first 250 groups")
	}
}

func ExampleParse() {
	a, _, err := Parse("sue dev,system:serviceaccounts:spark", YuniKorn)
	if err != nil {
		panic(err)
	}
	john := NewSubject("john", []string{"dev"})
	m := a.Match(john)
	fmt.Println(m.Allowed(), m.Kind, m.Name)
	fmt.Println(a.Allows(NewSubject("bob", []string{"test"})))
	// Output:
	// true group dev
	// false
}

func ExampleParse_yarn() {
	a, warns, _ := Parse("john,jane HR extra", YARN)
	fmt.Println(a)
	fmt.Println(warns[0])
	// Output:
	// john,jane HR
	// offset 12: everything after the second space is ignored, as YARN does: " extra"
}

// NewSubject sorts up to 128 groups one way and more another: both find
// every group, and none that is absent.
func TestSubjectSizes(t *testing.T) {
	for _, n := range []int{1, 2, 127, 128, 129, 300} {
		var groups []string
		for i := range n {
			groups = append(groups, fmt.Sprintf("team-%d", i))
		}
		groups = append(groups, groups[0]) // a duplicate changes nothing
		sub := NewSubject("u", groups)
		for _, g := range []string{groups[0], groups[n/2], groups[n-1]} {
			a := MustParse(" " + g)
			if m := a.Match(sub); m.Name != g {
				t.Fatalf("n=%d: %s not found: %+v", n, g, m)
			}
		}
		if a := MustParse(" team-x,other"); a.Allows(sub) {
			t.Fatalf("n=%d: absent group allowed", n)
		}
	}
}
