package acl

import "slices"

// Equal reports whether a and b allow exactly the same users and groups,
// whatever the order of their entries.
func (a *ACL) Equal(b *ACL) bool {
	if a.all || b.all {
		return a.all == b.all
	}
	return sameSet(a.users, b.users) && sameSet(a.groups, b.groups)
}

// sameSet compares two lists without duplicates as sets.
func sameSet(x, y []string) bool {
	return len(x) == len(y) && slices.Equal(slices.Sorted(slices.Values(x)), slices.Sorted(slices.Values(y)))
}
