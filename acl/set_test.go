package acl

import (
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestUserSubjects(t *testing.T) {
	subs := UserSubjects([]string{"alice", "bob"})
	a, _ := New([]string{"bob"}, []string{"dev"})
	if len(subs) != 2 || subs[0].User() != "alice" || a.Allows(&subs[0]) || !a.Allows(&subs[1]) || len(subs[1].Groups()) != 0 {
		t.Fatalf("%+v", subs)
	}
	if n := NewSubject("bob", nil); n.user != subs[1].user || n.uh != subs[1].uh || n.bloom != subs[1].bloom {
		t.Fatal("UserSubjects differs from NewSubject")
	}
}

// TestParseLargeACLMemory holds the parser of a 100,000-entry ACL to the
// memory it needs for its lists and its compiled set: at most 8 MB
// allocated in all, whatever the collector does (YuniKorn's parser takes
// 8.6 MB for the same ACL).
func TestParseLargeACLMemory(t *testing.T) {
	text := acl100k()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	a, warns, err := Parse(text, YuniKorn)
	runtime.ReadMemStats(&after)
	if err != nil || len(warns) != 0 || len(a.Users()) != 50000 || len(a.Groups()) != 50000 {
		t.Fatalf("%v %v %d %d", err, warns, len(a.Users()), len(a.Groups()))
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Fatalf("parsing 100,000 entries allocated %.1f MB, want at most 8 MB", float64(got)/(1<<20))
	}
}

// TestCleanParserAgrees checks the parser for lists without empty,
// duplicate, wildcard or invalid entries against the general one on
// random lists built from names that collide in every such way.
func TestCleanParserAgrees(t *testing.T) {
	names := []string{"a", "b", "A", "dev", "ops", "*", "", "x y", "team\x01", "é", "sa:ns:x", "a"}
	r := rand.New(rand.NewPCG(1, 2))
	list := func() string {
		n := r.IntN(6)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = names[r.IntN(len(names))]
		}
		return strings.Join(parts, ",")
	}
	clean := 0
	for range 20000 {
		text := list()
		if r.IntN(4) > 0 {
			text += " " + list()
		}
		users, groups, groupsAt := text, "", -1
		if i := strings.IndexByte(text, ' '); i >= 0 {
			users, groups, groupsAt = text[:i], text[i+1:], i+1
		}
		got, ok := parseClean(users, groups, groupsAt >= 0)
		p := parser{text: text}
		want, warns, err := p.lists(users, groups, groupsAt)
		if !ok {
			continue
		}
		clean++
		if err != nil || len(warns) != 0 {
			t.Fatalf("%q: the clean parser accepted what the general one reports: %v %v", text, err, warns)
		}
		if !slices.Equal(got.users, want.users) || !slices.Equal(got.groups, want.groups) || got.all != want.all ||
			!reflect.DeepEqual(*got.compiled(), *want.compiled()) {
			t.Fatalf("%q: clean %q, general %q", text, got.String(), want.String())
		}
	}
	if clean < 1000 {
		t.Fatalf("only %d inputs took the clean parser", clean)
	}
}

// TestFirstChecksRace checks an ACL whose set is built on its first check
// from many goroutines at once, and copies of it, under the race detector.
func TestFirstChecksRace(t *testing.T) {
	a := MustParse("alice,bob dev,ops")
	b := a
	sub := NewSubject("carol", []string{"ops"})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			acl := &a
			if i%2 == 1 {
				acl = &b
			}
			if !acl.Allows(sub) || acl.Match(sub).Name != "ops" {
				t.Error("ops not allowed")
			}
		})
	}
	wg.Wait()
	if a.compiled() != b.compiled() {
		t.Fatal("copies built two sets")
	}
	if n := testing.AllocsPerRun(100, func() { a.Allows(sub) }); n != 0 {
		t.Fatalf("%v allocations per check", n)
	}
}

// TestCleanParserAgreesOnLongLists is TestCleanParserAgrees for long lists,
// whose duplicates the clean parser finds by sorted hashes: a duplicate
// anywhere sends the list to the general parser, and a list without one
// parses as the general parser parses it, set included.
func TestCleanParserAgreesOnLongLists(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{17, 18, 40, 300} {
		for range 50 {
			users, groups := groupsN(n, "u"), groupsN(n/2+9, "g")
			dup := r.IntN(3) // 0 none, 1 in the users, 2 in the groups
			switch dup {
			case 1:
				users[r.IntN(n)] = users[r.IntN(n)]
			case 2:
				groups[r.IntN(len(groups))] = groups[r.IntN(len(groups))]
			}
			u, g := strings.Join(users, ","), strings.Join(groups, ",")
			got, ok := parseClean(u, g, true)
			p := parser{text: u + " " + g}
			want, warns, err := p.lists(u, g, len(u)+1)
			if err != nil {
				t.Fatal(err)
			}
			if len(warns) > 0 {
				if ok {
					t.Fatalf("n=%d: the clean parser accepted a list the general one warns about: %v", n, warns)
				}
				continue
			}
			if !ok {
				t.Fatalf("n=%d: a clean list without duplicates went to the general parser", n)
			}
			if !slices.Equal(got.users, want.users) || !slices.Equal(got.groups, want.groups) ||
				!reflect.DeepEqual(*got.compiled(), *want.compiled()) {
				t.Fatalf("n=%d: clean %q, general %q", n, got.String(), want.String())
			}
		}
	}
}
