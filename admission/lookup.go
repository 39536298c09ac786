package admission

import (
	"context"
	"slices"
	"strings"
	"sync"
)

type lookupKey struct{}

// lookupNotes collects a review's NoteLookup notes for Record.Lookup.
type lookupNotes struct {
	mu    sync.Mutex
	notes []string
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
