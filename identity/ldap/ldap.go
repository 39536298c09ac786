// Package ldap finds the groups of a user in an LDAP directory (OpenLDAP,
// 389 DS, FreeIPA, Active Directory).
//
// Rules this package enforces:
//   - Every value placed in a filter is escaped (RFC 4515), so no user name
//     can widen a search; empty names, NUL and invalid UTF-8 are refused.
//   - Exactly one entry must match the user filter (none is
//     identity.ErrUnknownUser), and it must carry the name exactly
//     (UserNameAttr): directories compare names ignoring case, usher does not.
//   - A user with more groups than SizeLimit is an error, never a truncated
//     list. Groups come back sorted and without duplicates.
//   - Every failure is an error, never "no groups". Errors start with
//     "ldap: " and never contain the bind password, nor the values of
//     bindpasswordfile and bindpasswordenv (the password may have been
//     written there by mistake).
//   - Each lookup is bounded by Timeout and by its context; at most
//     PoolSize connections are open.
//   - TLS requires TLS 1.2 or later and verifies the server's certificate.
package ldap

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	goldap "github.com/go-ldap/ldap/v3"

	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/internal/safefile"
)

// Source is the identity.Source of every group this package returns.
const Source identity.Source = "ldap"

// Resolver finds groups in an LDAP directory, safe for concurrent use; Close releases its connections.
type Resolver struct {
	cfg       Config
	urls      []*url.URL
	tlsBase   *tls.Config
	groupBase *goldap.DN // nil: no restriction (memberof only)
	timeLimit int        // server-side time limit of searches, seconds
	password  func() (string, error)
	timeout   error // context cause when Timeout expires
	pool      *pool
	now       func() time.Time

	downMu    sync.Mutex
	downUntil []time.Time // per URL: tried last until then
}

var _ identity.Resolver = (*Resolver)(nil)

// New checks cfg, reads the CA file and the bind password, and returns a
// Resolver. It does not connect, so a directory that is down at start-up
// is not fatal.
func New(cfg Config) (*Resolver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	r := &Resolver{
		cfg:       cfg,
		now:       time.Now,
		downUntil: make([]time.Time, len(cfg.URLs)),
		timeLimit: int(math.Ceil(cfg.Timeout.Seconds())),
		timeout:   fmt.Errorf("timed out after %v (timeout): %w", cfg.Timeout, context.DeadlineExceeded),
	}
	for _, raw := range cfg.URLs {
		u, _ := parseURL(raw) // checked by Validate
		r.urls = append(r.urls, u)
	}
	r.tlsBase = &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         cfg.ServerName,
		InsecureSkipVerify: cfg.InsecureSkipVerify, // opt-in, reported by Warnings
	}
	if cfg.CAFile != "" {
		pem, _, err := safefile.Read(cfg.CAFile, MaxCAFile, legacyLimit)
		if err != nil {
			return nil, fmt.Errorf("ldap: cafile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("ldap: cafile %s holds no PEM certificate", cfg.CAFile)
		}
		r.tlsBase.RootCAs = pool
	}
	if cfg.GroupBaseDN != "" {
		r.groupBase, _ = goldap.ParseDN(cfg.GroupBaseDN) // checked by Validate
	}
	switch {
	case cfg.BindPasswordEnv != "":
		pw, ok := os.LookupEnv(cfg.BindPasswordEnv)
		if !ok || pw == "" {
			// The name is not repeated: it may be the password itself,
			// written where the name belongs.
			return nil, errors.New("ldap: bindpasswordenv: the environment variable it names is not set or empty")
		}
		r.password = func() (string, error) { return pw, nil }
	case cfg.BindPasswordFile != "":
		if _, err := readPasswordFile(cfg.BindPasswordFile); err != nil {
			return nil, err
		}
		r.password = func() (string, error) { return readPasswordFile(cfg.BindPasswordFile) }
	}
	r.pool = &pool{slots: make(chan struct{}, cfg.PoolSize), dial: r.dial}
	return r, nil
}

// The limits of the files the resolver reads. A file of another type or
// larger, up to legacyLimit bytes, is still read until a later release
// refuses it (docs/upgrade.md).
const (
	MaxCAFile       = 1 << 20
	MaxPasswordFile = 64 << 10
	legacyLimit     = 64 << 20
)

// readPasswordFile returns the content of path without one trailing
// newline. Errors repeat neither the content nor the path (which may be
// the password itself, written where the file name belongs).
func readPasswordFile(path string) (string, error) {
	data, _, err := safefile.Read(path, MaxPasswordFile, legacyLimit)
	if err != nil {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err
		}
		return "", fmt.Errorf("ldap: bindpasswordfile: cannot read the file it names: %w", err)
	}
	pw := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if pw == "" {
		return "", errors.New("ldap: bindpasswordfile: the file it names is empty")
	}
	return pw, nil
}

// Close closes the idle connections; connections in use are closed when
// their lookup ends. Lookups after Close fail.
func (r *Resolver) Close() error {
	r.pool.close()
	return nil
}

// SourceInChain marks a group the in-chain search found that is not one of
// the user's own groups (the directory does not tell the chain).
const SourceInChain identity.Source = "ldap in-chain"

// group is a group found for a user, and how it was reached.
type group struct {
	dn, name string
	src      identity.Source
	chain    []string // the names of the groups that led to it from one of the user's own
}

// Resolve returns the groups of user, sorted, each with Source "ldap",
// identity.Via for a nested group, or SourceInChain.
func (r *Resolver) Resolve(ctx context.Context, user string) (identity.Info, error) {
	switch {
	case user == "":
		return identity.Info{}, errors.New("ldap: empty user name")
	case strings.IndexByte(user, 0) >= 0:
		return identity.Info{}, fmt.Errorf("ldap: user name %q contains NUL", user)
	case !utf8.ValidString(user):
		return identity.Info{}, fmt.Errorf("ldap: user name %q is not valid UTF-8", user)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, r.cfg.Timeout, r.timeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		c, reused, err := r.pool.get(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return identity.Info{}, ctxError(ctx, fmt.Sprintf("groups of %q", user))
			}
			return identity.Info{}, err
		}
		in, err := r.lookup(ctx, c, user)
		r.pool.put(c)
		// A reused connection may have died while idle (server restart,
		// idle timeout): retry once on a fresh one.
		if err != nil && c.broken && reused && attempt == 0 && ctx.Err() == nil {
			r.pool.flush()
			continue
		}
		return in, err
	}
}

// lookup runs the searches for user on c.
func (r *Resolver) lookup(ctx context.Context, c *conn, user string) (identity.Info, error) {
	end := c.guard(ctx)
	defer end()
	entry, err := r.findUser(ctx, c, user)
	if err != nil {
		return identity.Info{}, err
	}
	var groups []group
	if r.cfg.GroupSearch == GroupSearchMemberOf {
		groups, err = r.groupsFromMemberOf(ctx, c, user, entry)
	} else {
		member := entry.DN
		if r.cfg.GroupSearch == GroupSearchMemberUID {
			member = user
		}
		groups, err = r.searchGroups(ctx, c, user, "search for groups of %q",
			"(&"+r.cfg.GroupFilter+"("+r.cfg.MemberAttr+"="+goldap.EscapeFilter(member)+"))", nil, group{src: Source})
	}
	if err != nil {
		return identity.Info{}, err
	}
	switch {
	case r.cfg.InChain:
		groups, err = r.inChain(ctx, c, user, entry, groups)
	case r.cfg.NestedGroups > 0:
		groups, err = r.nested(ctx, c, user, groups)
	}
	if err != nil {
		return identity.Info{}, err
	}
	return r.finish(user, groups), nil
}

// finish lower-cases the names (LowerCaseGroups), sorts the groups by name
// and drops duplicate names, keeping the shortest chain: user's Info.
func (r *Resolver) finish(user string, groups []group) identity.Info {
	if r.cfg.LowerCaseGroups {
		for i := range groups {
			groups[i].name = strings.ToLower(groups[i].name)
		}
	}
	slices.SortStableFunc(groups, func(a, b group) int {
		return cmp.Or(strings.Compare(a.name, b.name), len(a.chain)-len(b.chain))
	})
	groups = slices.CompactFunc(groups, func(a, b group) bool { return a.name == b.name })
	in := identity.Info{User: user, Groups: make([]string, len(groups)), Sources: make([]identity.Source, len(groups))}
	for i, g := range groups {
		in.Groups[i], in.Sources[i] = g.name, g.src
	}
	return in
}

// dnKey is the key of a DN for telling groups apart: its normal form,
// lower-cased (DNs compare without regard to case in practice).
func dnKey(dn string) string {
	if d, err := goldap.ParseDN(dn); err == nil {
		dn = d.String()
	}
	return strings.ToLower(dn)
}

// nested expands the groups of groups up to NestedGroups levels, one
// search a level (per MaxNestedChunk groups); a group already found is not
// searched again, so a cycle ends.
func (r *Resolver) nested(ctx context.Context, c *conn, user string, direct []group) ([]group, error) {
	all := slices.Clone(direct)
	seen := make(map[string]bool, len(direct))
	var level []group
	for _, g := range direct {
		if g.dn == "" {
			continue // a group without a DN cannot be a member
		}
		k := dnKey(g.dn)
		if !seen[k] {
			seen[k] = true
			level = append(level, g)
		}
	}
	for depth := 1; depth <= r.cfg.NestedGroups && len(level) > 0; depth++ {
		var next []group
		for chunk := range slices.Chunk(level, MaxNestedChunk) {
			parents, err := r.parents(ctx, c, user, chunk, seen)
			if err != nil {
				return nil, err
			}
			next = append(next, parents...)
		}
		all = append(all, next...)
		if len(all) > r.cfg.SizeLimit {
			return nil, fmt.Errorf("ldap: user %q is in more than sizelimit %d groups, counting nested groups to level %d", user, r.cfg.SizeLimit, depth)
		}
		level = next
	}
	return all, nil
}

// parents finds the groups that have a group of children as a member and
// are not in seen (which it extends), marking each with the chain through
// the child that led to it.
func (r *Resolver) parents(ctx context.Context, c *conn, user string, children []group, seen map[string]bool) ([]group, error) {
	// Children by normal form and by their DN as written, lower-cased:
	// most member values come back as written, matched without parsing.
	byKey := make(map[string]group, 2*len(children))
	var or strings.Builder
	or.WriteString("(|")
	for _, ch := range children {
		byKey[dnKey(ch.dn)] = ch
		byKey[strings.ToLower(ch.dn)] = ch
		or.WriteString("(" + r.cfg.MemberAttr + "=" + goldap.EscapeFilter(ch.dn) + ")")
	}
	or.WriteString(")")
	res, err := r.searchGroupBase(ctx, c, user, "search for nested groups of %q", "(&"+r.cfg.GroupFilter+or.String()+")",
		r.cfg.GroupNameAttr, r.cfg.MemberAttr)
	if err != nil {
		return nil, err
	}
	var out []group
	for _, e := range res.Entries {
		k := dnKey(e.DN)
		if seen[k] {
			continue // found already: at a lower level, or a cycle
		}
		seen[k] = true
		name, err := r.groupName(e)
		if err != nil {
			return nil, err
		}
		// The child that led here; a server that returns a large member
		// attribute in ranges (Active Directory) may leave it out.
		chain := []string{"a nested group"}
		if ch, ok := memberChild(e.GetEqualFoldAttributeValues(r.cfg.MemberAttr), byKey); ok {
			chain = append(slices.Clip(ch.chain), ch.name)
		}
		out = append(out, group{dn: e.DN, name: name, chain: chain, src: identity.Via(Source, chain...)})
	}
	slices.SortFunc(out, func(a, b group) int { return strings.Compare(a.name, b.name) })
	return out, nil
}

// memberChild is the child of the first member value that is one of the
// children, compared as written, then in normal form.
func memberChild(members []string, byKey map[string]group) (group, bool) {
	for _, m := range members {
		if ch, ok := byKey[strings.ToLower(m)]; ok {
			return ch, true
		}
	}
	for _, m := range members {
		if ch, ok := byKey[dnKey(m)]; ok {
			return ch, true
		}
	}
	return group{}, false
}

// InChainFilter is the filter of groups whose memberAttr holds userDN at
// any depth (LDAP_MATCHING_RULE_IN_CHAIN).
func InChainFilter(groupFilter, memberAttr, userDN string) string {
	return "(&" + groupFilter + "(" + memberAttr + ":" + InChainRule + ":=" + goldap.EscapeFilter(userDN) + "))"
}

// inChain adds to the user's own groups every group the directory says
// the user is in at any depth (InChainFilter), marked SourceInChain.
func (r *Resolver) inChain(ctx context.Context, c *conn, user string, entry *goldap.Entry, direct []group) ([]group, error) {
	own := make(map[string]bool, len(direct))
	for _, g := range direct {
		own[dnKey(g.dn)] = true
	}
	filter := InChainFilter(r.cfg.GroupFilter, r.cfg.MemberAttr, entry.DN)
	mark := group{src: SourceInChain, chain: []string{"in-chain"}}
	found, err := r.searchGroups(ctx, c, user, "in-chain search for groups of %q", filter, own, mark)
	return append(slices.Clone(direct), found...), err
}

func (r *Resolver) findUser(ctx context.Context, c *conn, user string) (*goldap.Entry, error) {
	var attrs []string
	if r.cfg.UserNameAttr != NoUserNameAttr {
		attrs = append(attrs, r.cfg.UserNameAttr)
	}
	if r.cfg.GroupSearch == GroupSearchMemberOf {
		attrs = append(attrs, r.cfg.MemberOfAttr)
	}
	if len(attrs) == 0 {
		attrs = []string{"1.1"} // RFC 4511: no attributes
	}
	filter := strings.ReplaceAll(r.cfg.UserFilter, UserPlaceholder, goldap.EscapeFilter(user))
	// A size limit of 2 is enough to tell one match from several.
	res, err := r.search(ctx, c, fmt.Sprintf("search for user %q", user), goldap.NewSearchRequest(
		r.cfg.UserBaseDN, goldap.ScopeWholeSubtree, goldap.NeverDerefAliases, 2, r.timeLimit, false, filter, attrs, nil))
	limited := goldap.IsErrorWithCode(err, goldap.LDAPResultSizeLimitExceeded)
	switch {
	case limited || err == nil && len(res.Entries) > 1:
		return nil, fmt.Errorf("ldap: user %q is ambiguous: more than one entry under %s matches %s: %s",
			user, r.cfg.UserBaseDN, filter, entryDNs(res, limited))
	case goldap.IsErrorWithCode(err, goldap.LDAPResultNoSuchObject):
		return nil, fmt.Errorf("ldap: userbasedn %s does not exist on %s, or %s may not read it", r.cfg.UserBaseDN, c.url, r.bindName())
	case err != nil:
		return nil, err
	case len(res.Entries) == 0:
		return nil, fmt.Errorf("ldap: user %q: %w: no entry under %s matches %s", user, identity.ErrUnknownUser, r.cfg.UserBaseDN, filter)
	}
	entry := res.Entries[0]
	if r.cfg.UserNameAttr != NoUserNameAttr {
		names := entry.GetEqualFoldAttributeValues(r.cfg.UserNameAttr)
		if !slices.Contains(names, user) {
			return nil, fmt.Errorf("ldap: user %q: %w: the matching entry %s has %s %q, not exactly %q (names are case sensitive)",
				user, identity.ErrUnknownUser, entry.DN, r.cfg.UserNameAttr, names, user)
		}
	}
	return entry, nil
}

// entryDNs lists the DNs of res, then "..." when the search was cut short.
func entryDNs(res *goldap.SearchResult, more bool) string {
	var dns []string
	if res != nil {
		for _, e := range res.Entries {
			dns = append(dns, e.DN)
		}
	}
	if more {
		dns = append(dns, "...")
	}
	return strings.Join(dns, "; ")
}

// groupsFromMemberOf turns the group DNs on the user entry into groups.
func (r *Resolver) groupsFromMemberOf(ctx context.Context, c *conn, user string, entry *goldap.Entry) ([]group, error) {
	var dns []*goldap.DN
	for _, v := range entry.GetEqualFoldAttributeValues(r.cfg.MemberOfAttr) {
		dn, err := goldap.ParseDN(v)
		if err != nil {
			return nil, fmt.Errorf("ldap: user %q: %s value %q of %s is not a DN: %v", user, r.cfg.MemberOfAttr, v, entry.DN, err)
		}
		if r.groupBase == nil || r.groupBase.AncestorOfFold(dn) {
			dns = append(dns, dn)
		}
	}
	if len(dns) > r.cfg.SizeLimit {
		return nil, fmt.Errorf("ldap: user %q is in %d groups, more than sizelimit %d", user, len(dns), r.cfg.SizeLimit)
	}
	names := make([]group, 0, len(dns))
	for _, dn := range dns {
		name, ok := rdnValue(dn, r.cfg.GroupNameAttr)
		if !ok {
			// The name is not in the DN: read it from the group entry.
			res, err := r.search(ctx, c, "read group "+dn.String(), goldap.NewSearchRequest(
				dn.String(), goldap.ScopeBaseObject, goldap.NeverDerefAliases, 1, r.timeLimit, false,
				"(objectClass=*)", []string{r.cfg.GroupNameAttr}, nil))
			if goldap.IsErrorWithCode(err, goldap.LDAPResultNoSuchObject) {
				continue // the group was deleted; memberOf has not caught up
			}
			if err != nil {
				return nil, err
			}
			if len(res.Entries) != 1 {
				return nil, fmt.Errorf("ldap: group %s of user %q cannot be read by %s", dn, user, r.bindName())
			}
			if name, err = r.groupName(res.Entries[0]); err != nil {
				return nil, err
			}
		}
		names = append(names, group{dn: dn.String(), name: name, src: Source})
	}
	return names, nil
}

// searchGroups searches GroupBaseDN (searchGroupBase) and names each entry
// whose DN key skip does not hold, marked like g.
func (r *Resolver) searchGroups(ctx context.Context, c *conn, user, what, filter string,
	skip map[string]bool, g group) ([]group, error) {
	res, err := r.searchGroupBase(ctx, c, user, what, filter, r.cfg.GroupNameAttr)
	if err != nil {
		return nil, err
	}
	out := make([]group, 0, len(res.Entries))
	for _, e := range res.Entries {
		if skip != nil && skip[dnKey(e.DN)] {
			continue
		}
		if g.name, err = r.groupName(e); err != nil {
			return nil, err
		}
		g.dn = e.DN
		out = append(out, g)
	}
	return out, nil
}

// searchGroupBase searches the subtree of GroupBaseDN for the groups of
// user; what is the search's description, with %q for user.
func (r *Resolver) searchGroupBase(ctx context.Context, c *conn, user, what, filter string, attrs ...string) (*goldap.SearchResult, error) {
	res, err := r.search(ctx, c, fmt.Sprintf(what, user), goldap.NewSearchRequest(
		r.cfg.GroupBaseDN, goldap.ScopeWholeSubtree, goldap.NeverDerefAliases, r.cfg.SizeLimit, r.timeLimit, false, filter, attrs, nil))
	switch {
	case goldap.IsErrorWithCode(err, goldap.LDAPResultSizeLimitExceeded):
		n := 0
		if res != nil {
			n = len(res.Entries)
		}
		if n >= r.cfg.SizeLimit {
			return nil, fmt.Errorf("ldap: user %q is in more than sizelimit %d groups", user, r.cfg.SizeLimit)
		}
		return nil, fmt.Errorf("ldap: the server stopped after %d groups of user %q: its size limit for %s is below sizelimit %d",
			n, user, r.bindName(), r.cfg.SizeLimit)
	case goldap.IsErrorWithCode(err, goldap.LDAPResultNoSuchObject):
		return nil, fmt.Errorf("ldap: groupbasedn %s does not exist on %s, or %s may not read it", r.cfg.GroupBaseDN, c.url, r.bindName())
	}
	return res, err
}

// groupName is the value of GroupNameAttr in the entry's RDN, else its first value.
func (r *Resolver) groupName(e *goldap.Entry) (string, error) {
	if dn, err := goldap.ParseDN(e.DN); err == nil {
		if name, ok := rdnValue(dn, r.cfg.GroupNameAttr); ok {
			return name, nil
		}
	}
	vals := e.GetEqualFoldAttributeValues(r.cfg.GroupNameAttr)
	if len(vals) == 0 || vals[0] == "" {
		return "", fmt.Errorf("ldap: group %s has no %s (groupnameattr)", e.DN, r.cfg.GroupNameAttr)
	}
	return vals[0], nil
}

func rdnValue(dn *goldap.DN, attr string) (string, bool) {
	if len(dn.RDNs) == 0 {
		return "", false
	}
	for _, a := range dn.RDNs[0].Attributes {
		if strings.EqualFold(a.Type, attr) && a.Value != "" {
			return a.Value, true
		}
	}
	return "", false
}

func (r *Resolver) bindName() string {
	if r.cfg.BindDN == "" {
		return "anonymous"
	}
	return r.cfg.BindDN
}

// search runs req on c. Errors the server answered with are returned as
// they are, with the partial result; any other marks c broken.
func (r *Resolver) search(ctx context.Context, c *conn, what string, req *goldap.SearchRequest) (*goldap.SearchResult, error) {
	res, err := c.l.Search(req)
	switch {
	case err == nil || answered(err) && goldap.IsErrorAnyOf(err, goldap.LDAPResultSizeLimitExceeded, goldap.LDAPResultNoSuchObject):
		return res, err
	case !answered(err):
		c.broken = true
		if ctx.Err() != nil {
			return nil, ctxError(ctx, what+" on "+c.url)
		}
		res = nil
	}
	return res, &ldapError{msg: fmt.Sprintf("ldap: %s on %s failed: %s", what, c.url, describe(err)), err: err}
}

// ldapError is a message written for people, wrapping the error it describes.
type ldapError struct {
	msg string
	err error
}

func (e ldapError) Error() string { return e.msg }
func (e ldapError) Unwrap() error { return e.err }

// ctxError reports that ctx ended during what: cancelled, or timed out.
func ctxError(ctx context.Context, what string) error {
	cause := context.Cause(ctx)
	return &ldapError{msg: "ldap: " + what + ": " + cause.Error(), err: cause}
}

// answered reports whether err is a result the server sent, not a network or client failure.
func answered(err error) bool {
	var le *goldap.Error
	return errors.As(err, &le) && le.ResultCode < goldap.ErrorNetwork
}

// describe renders an error of go-ldap without its "LDAP Result Code" boilerplate.
func describe(err error) string {
	var le *goldap.Error
	if !errors.As(err, &le) {
		return err.Error()
	}
	var detail string
	if le.Err != nil {
		detail = strings.TrimPrefix(le.Err.Error(), "ldap: ")
	}
	text := strings.ToLower(goldap.LDAPResultCodeMap[le.ResultCode])
	if le.ResultCode >= goldap.ErrorNetwork {
		return cmp.Or(detail, text)
	}
	if text == "" {
		text = fmt.Sprintf("result code %d", le.ResultCode)
	}
	if detail != "" {
		text += " (" + detail + ")"
	}
	return text
}
