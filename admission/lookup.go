package admission

import (
	"context"
	"strings"
	"sync"
)

// This file carries a review's identity lookup notes from the
// QueueAuthorizer to the audit record: when the authorizer found the
// submitter's groups by more than asking its resolver for the user (a
// service account that is not looked up, a name a mapping rule changed,
// a static override, a user the directory does not know decided on the
// groups the API server gave), it says so with NoteLookup on the context
// it was given, and the review's Record.Lookup carries it. A decision is
// never made on half an identity without the audit record saying so.

type lookupKey struct{}

// lookupNotes collects the notes of one review (the authorizer may be
// called for several queues). It is the review's context too, so that
// carrying it costs one allocation.
type lookupNotes struct {
	context.Context
	mu    sync.Mutex
	notes []string
}

// Value returns the notes for lookupKey, else what the parent holds.
func (n *lookupNotes) Value(key any) any {
	if key == (lookupKey{}) {
		return n
	}
	return n.Context.Value(key)
}

// withLookupNotes returns ctx carrying a fresh collector.
func withLookupNotes(ctx context.Context) (context.Context, *lookupNotes) {
	n := &lookupNotes{Context: ctx}
	return n, n
}

// NoteLookup records how the submitter of the review ctx belongs to was
// identified, for its audit record (Record.Lookup). Outside a review, or
// with an empty note, it does nothing. A note repeated for several
// queues is kept once.
func NoteLookup(ctx context.Context, note string) {
	n, _ := ctx.Value(lookupKey{}).(*lookupNotes)
	if n == nil || note == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, s := range n.notes {
		if s == note {
			return
		}
	}
	n.notes = append(n.notes, note)
}

// String joins the notes with "; ".
func (n *lookupNotes) String() string {
	if n == nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.notes, "; ")
}
