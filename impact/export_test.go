package impact

import "github.com/usherhq/usher/policy"

// Diff compares the rights of two policies, without placement; nil has no
// partitions.
func Diff(old, new *policy.Snapshot, opts Options) *Result {
	return diff(old, new, nil, nil, opts)
}
