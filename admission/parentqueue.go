package admission

import "context"

// ParentQueueLookup reads the yunikorn.apache.org/parentqueue annotation
// of Namespace name, "" when it has none.
type ParentQueueLookup func(ctx context.Context, name string) (string, error)

// WithParentQueueLookup sets how YuniKorn's namespace.parentqueue tag is
// read for the placement rules. Default: none, and the tag is absent.
func WithParentQueueLookup(l ParentQueueLookup) Option {
	return func(h *Handler) { h.reads.parentQueue = l }
}
