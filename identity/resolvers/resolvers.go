// Package resolvers builds a partition's group resolver, with its cache,
// from its settings: the one place every resolver type is constructed.
//
// Rules this package enforces:
//   - A Resolver is built from Settings alone: the users-to-groups table is
//     read with the configuration (Settings.Table), never again here.
//   - Key names everything that makes two resolvers answer differently
//     (for file, the table's digest); a reload keeps a resolver, and its
//     cache, exactly when the key is equal.
//   - A Resolver holding connections (ldap) is closed with Close, when
//     the caller decides.
package resolvers

import (
	"cmp"
	"fmt"
	"io"
	"time"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/identity/cache"
	"github.com/usherhq/usher/identity/ldap"
)

// Types of Settings.Type.
const (
	TypeNone = "none"
	TypeOS   = "os"
	TypeFile = "file"
	TypeTest = "test"
	TypeLDAP = "ldap"
)

// Settings are a partition's usergroupresolver block, validated.
type Settings struct {
	Type string // none (the default, also ""), os, file, test or ldap
	File string // the users-to-groups file of type file, absolute
	// Table is File parsed with the configuration, FileDigest its SHA-256.
	Table      identity.Resolver
	FileDigest [32]byte
	Users      map[string][]string // the table of type test
	LDAP       *ldap.Config        // type ldap's block, defaults applied and validated
	Cache      cache.Options       // the cache block; Name and Timeout are set by New
	// Policy is who is looked up and under which name. It is applied above
	// the cache, per generation, so it is not part of Key: the cache is
	// keyed by the name the resolver is asked for.
	Policy identity.Policy
}

// Key identifies the resolver Settings build: equal keys build resolvers
// that answer alike. Keys are comparable with ==.
type Key struct{ s string }

// Key returns the key of s: every setting but Table, which FileDigest stands
// for, and Policy (fmt sorts the keys of Users and quotes LDAP's strings).
func (s Settings) Key() Key {
	return Key{fmt.Sprintf("type=%s cache=%v file=%q sha256=%x users=%q ldap=%#v",
		cmp.Or(s.Type, TypeNone), s.Cache, s.File, s.FileDigest, s.Users, s.LDAP)}
}

// Resolver is a built resolver: the cache in front of the type's resolver.
type Resolver struct {
	identity.Resolver
	Cache  *cache.Cache // nil for type none
	Key    Key
	Closer io.Closer // what holds connections (ldap); nil for the other types
}

// Close releases the resolver's connections.
func (r *Resolver) Close() error {
	if r.Closer == nil {
		return nil
	}
	return r.Closer.Close()
}

// New builds the resolver s describes, with its cache.
func New(s Settings) (*Resolver, error) {
	r := &Resolver{Key: s.Key()}
	var base identity.Resolver
	var timeout time.Duration // the cache's default unless set below
	switch s.Type {
	case "", TypeNone:
		r.Resolver = identity.None()
		return r, nil
	case TypeOS:
		base = identity.OS()
	case TypeFile:
		if s.Table == nil {
			return nil, fmt.Errorf("file resolver %s: the table was not read", s.File)
		}
		base = s.Table
	case TypeTest:
		base = identity.Static(s.Users)
	case TypeLDAP:
		if s.LDAP == nil {
			return nil, fmt.Errorf("ldap resolver without settings")
		}
		l, err := ldap.New(*s.LDAP)
		if err != nil {
			return nil, err
		}
		base, r.Closer = l, l
		// The resolver bounds a lookup itself and says so in its error; the
		// cache's bound is a backstop that never cuts that short.
		timeout = 2 * s.LDAP.WithDefaults().Timeout
	default:
		return nil, fmt.Errorf("unknown resolver type %q", s.Type)
	}
	opts := s.Cache
	opts.Name, opts.Timeout = s.Type, timeout
	r.Cache = cache.New(base, opts)
	r.Resolver = r.Cache
	return r, nil
}
