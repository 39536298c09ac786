package admission

import (
	"context"
	"slices"
	"strings"
	"sync"
)

type lookupKey struct{}

// lookupNotes collects a review's NoteLookup notes for Record.Lookup; it
// is the review's context too, so that carrying it costs one allocation.
type lookupNotes struct {
	context.Context
	mu    sync.Mutex
	notes []string
}

func (n *lookupNotes) Value(key any) any {
	if key == (lookupKey{}) {
		return n
	}
	return n.Context.Value(key)
}

// NoteLookup records, once, how the submitter of ctx's review was
// identified beyond asking for the user (a mapping rule, an override, an
// unknown user); outside a review, nothing.
func NoteLookup(ctx context.Context, note string) {
	n, _ := ctx.Value(lookupKey{}).(*lookupNotes)
	if n == nil || note == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !slices.Contains(n.notes, note) {
		n.notes = append(n.notes, note)
	}
}

func (n *lookupNotes) String() string {
	if n == nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.notes, "; ")
}
