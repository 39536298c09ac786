package acl

import "testing"

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
