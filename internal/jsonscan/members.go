package jsonscan

import (
	"math/bits"
	"slices"
	"strconv"
)

// maxKeys is the most member names one Keys can hold: duplicates are
// tracked in one 64-bit set.
const maxKeys = 64

// Keys is the list of member names an object is read for; a member is
// known to its reader by its index in the list. Build one per object type,
// once (a package variable), with NewKeys.
type Keys struct {
	names []string
	// buckets[h] has bit i set when names[i] hashes to h (bucket), so a
	// lookup compares a key with the one or two names of its bucket only.
	buckets [64]uint64
}

// bucket hashes a member name by its first byte and length.
func bucket(name string) int {
	if name == "" {
		return 0
	}
	return int(uint(name[0])+uint(len(name))*7) & 63
}

// NewKeys returns the Keys for names, in order. It panics on more than 64
// names or a repeated name: both are programming errors.
func NewKeys(names ...string) *Keys {
	if len(names) > maxKeys {
		panic("jsonscan: more than 64 keys")
	}
	k := &Keys{names: names}
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			panic("jsonscan: repeated key " + strconv.Quote(n))
		}
		k.buckets[bucket(n)] |= 1 << i
	}
	return k
}

// Index returns the index of name, or -1.
func (k *Keys) Index(name string) int {
	for b := k.buckets[bucket(name)]; b != 0; b &= b - 1 {
		if i := bits.TrailingZeros64(b); k.names[i] == name {
			return i
		}
	}
	return -1
}

// Members walks the members of one object, yielding the wanted ones by
// index. Use it as
//
//	m := d.Members("request", requestKeys)
//	for i := m.Next(); i >= 0; i = m.Next() {
//		switch i {
//		case keyUID:
//			req.UID = d.StringField("request.uid")
//		...
//		}
//	}
//
// Each yielded member's value must be read (or skipped with Skip) before
// the next call. Members that Keys does not list are validated and skipped
// for the caller. A listed member that appears a second time fails with
// "duplicate member". A null instead of the object is accepted when the
// Members was opened with MembersOrNull.
type Members struct {
	d     *Scanner
	keys  *Keys
	seen  uint64
	first bool
	open  bool
}

// Members opens the object at the scanner's position (field names it in
// errors) for reading the members keys lists. If no object starts here
// the error is recorded and Next returns -1 at once.
func (d *Scanner) Members(field string, keys *Keys) Members {
	return Members{d: d, keys: keys, first: true, open: d.Object(field)}
}

// MembersOrNull is Members for a value that may also be null, which reads as
// an object without members (as encoding/json leaves the target unset).
func (d *Scanner) MembersOrNull(field string, keys *Keys) Members {
	if d.Null() {
		return Members{d: d, keys: keys}
	}
	return d.Members(field, keys)
}

// Next advances to the next wanted member and returns its index in Keys,
// with the scanner positioned at its value, or -1 at the end of the object
// or on an error.
func (m *Members) Next() int {
	if !m.open {
		return -1
	}
	d := m.d
	for {
		key, ok := d.Next(&m.first)
		if !ok {
			m.open = false
			return -1
		}
		i := m.keys.Index(key)
		if i < 0 {
			d.Skip()
			continue
		}
		if m.seen&(1<<i) != 0 {
			d.Fail("duplicate member " + strconv.Quote(key))
			m.open = false
			return -1
		}
		m.seen |= 1 << i
		return i
	}
}

// StringList reads an array of strings (null elements read as "", as with
// encoding/json) or null (nil); an empty array is a non-nil empty slice.
// It keeps at most max strings and reads the rest without keeping them; n
// is the array's length. The result is allocated once, at its final size.
func (d *Scanner) StringList(field string, max int) ([]string, int) {
	if d.Null() || !d.Array(field) {
		return nil, 0
	}
	var tmp [16]string
	list, n := tmp[:0], 0
	first := true
	for d.Elem(&first) {
		if s := d.StringField(field); n < max {
			list = append(list, s)
		}
		n++
	}
	if d.err != nil {
		return nil, 0
	}
	if len(list) == 0 {
		return []string{}, n
	}
	return append([]string(nil), list...), n
}
