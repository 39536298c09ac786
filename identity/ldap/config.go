package ldap

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"

	goldap "github.com/go-ldap/ldap/v3"
)

// GroupSearch says how the groups of a user are found.
type GroupSearch string

// The group searches (docs/ldap.md).
const (
	GroupSearchMemberOf  GroupSearch = "memberof"  // the group DNs on the user entry (Active Directory, FreeIPA)
	GroupSearchMember    GroupSearch = "member"    // groups whose MemberAttr holds the user's DN (groupOfNames)
	GroupSearchMemberUID GroupSearch = "memberuid" // groups whose MemberAttr holds the user name (posixGroup)
)

// UserPlaceholder in Config.UserFilter is replaced by the user name, escaped (RFC 4515).
const UserPlaceholder = "{user}"

// NoUserNameAttr as Config.UserNameAttr turns off the exact user name check.
const NoUserNameAttr = "none"

// Config configures a Resolver: a usergroupresolver's ldap: block, whose
// keys docs/ldap.md describes with their defaults (WithDefaults). It holds
// no secret, so it may be printed or logged as it is.
type Config struct {
	URLs               []string `yaml:"urls"` // tried in order, one that failed last for 30 seconds
	StartTLS           bool     `yaml:"starttls"`
	CAFile             string   `yaml:"cafile"`
	ServerName         string   `yaml:"servername"`
	InsecureSkipVerify bool     `yaml:"insecureskipverify"` // anyone on the path can then read the bind password
	BindDN             string   `yaml:"binddn"`             // with one of the two below; anonymous when empty
	BindPasswordFile   string   `yaml:"bindpasswordfile"`   // read for each connection: a rotated secret needs no restart
	BindPasswordEnv    string   `yaml:"bindpasswordenv"`    // read once by New
	UserBaseDN         string   `yaml:"userbasedn"`
	UserFilter         string   `yaml:"userfilter"`
	// UserNameAttr must hold the user name exactly: LDAP matches names
	// ignoring case, usher does not, so without it "ALICE" would get
	// alice's groups. NoUserNameAttr turns the check off.
	UserNameAttr    string        `yaml:"usernameattr"`
	GroupSearch     GroupSearch   `yaml:"groupsearch"`
	MemberOfAttr    string        `yaml:"memberofattr"`
	GroupBaseDN     string        `yaml:"groupbasedn"` // with memberof, only groups under it count
	GroupFilter     string        `yaml:"groupfilter"` // ANDed with the membership clause
	MemberAttr      string        `yaml:"memberattr"`
	GroupNameAttr   string        `yaml:"groupnameattr"` // the RDN value when it is the RDN's attribute
	Timeout         time.Duration `yaml:"timeout"`       // one lookup, from waiting for a connection to the last search
	PoolSize        int           `yaml:"poolsize"`
	SizeLimit       int           `yaml:"sizelimit"` // the most groups of a user; more is an error
	NestedGroups    int           `yaml:"nestedgroups"`
	InChain         bool          `yaml:"inchain"` // LDAP_MATCHING_RULE_IN_CHAIN: Active Directory expands nesting
	LowerCaseGroups bool          `yaml:"lowercasegroups"`
}

const (
	MaxNestedGroups = 10                        // the largest NestedGroups
	MaxNestedChunk  = 50                        // group DNs one nested search ORs together
	InChainRule     = "1.2.840.113556.1.4.1941" // Active Directory's LDAP_MATCHING_RULE_IN_CHAIN
)

// WithDefaults returns c with its defaults set (docs/ldap.md lists them);
// they are applied here and nowhere else.
func (c Config) WithDefaults() Config {
	c.UserFilter = cmp.Or(c.UserFilter, "(uid={user})")
	c.UserNameAttr = cmp.Or(c.UserNameAttr, "uid")
	c.GroupSearch = cmp.Or(c.GroupSearch, GroupSearchMember)
	switch {
	case c.GroupSearch == GroupSearchMemberUID:
		c.MemberAttr = cmp.Or(c.MemberAttr, "memberUid")
		c.GroupFilter = cmp.Or(c.GroupFilter, "(objectClass=posixGroup)")
	case c.GroupSearch == GroupSearchMember || c.GroupSearch == GroupSearchMemberOf && (c.NestedGroups > 0 || c.InChain):
		c.MemberAttr = cmp.Or(c.MemberAttr, "member")
		c.GroupFilter = cmp.Or(c.GroupFilter, "(objectClass=groupOfNames)")
	}
	if c.GroupSearch == GroupSearchMemberOf {
		c.MemberOfAttr = cmp.Or(c.MemberOfAttr, "memberOf")
	}
	c.GroupNameAttr = cmp.Or(c.GroupNameAttr, "cn")
	c.Timeout = cmp.Or(c.Timeout, 5*time.Second)
	c.PoolSize = cmp.Or(c.PoolSize, 4)
	c.SizeLimit = cmp.Or(c.SizeLimit, 1000)
	return c
}

// Validate reports the first problem with c after defaults, naming the
// field by its YAML key. It reads no file and no environment variable.
func (c Config) Validate() error {
	// A setting the chosen group search would ignore is an error.
	mode := cmp.Or(c.GroupSearch, GroupSearchMember)
	// Nested groups are searched as groupOfNames, also with memberof.
	nestedSearch := c.NestedGroups > 0 || c.InChain
	switch mode {
	case GroupSearchMemberOf:
		if nestedSearch {
			break
		}
		if c.GroupFilter != "" {
			return fieldError("groupfilter", "is not used with groupsearch memberof (the groups come from the user entry)")
		}
		if c.MemberAttr != "" {
			return fieldError("memberattr", "is not used with groupsearch memberof; set memberofattr instead")
		}
	case GroupSearchMember, GroupSearchMemberUID:
		if c.MemberOfAttr != "" {
			return fieldError("memberofattr", "is only used with groupsearch memberof, not %s", mode)
		}
	}
	c = c.WithDefaults()

	if len(c.URLs) == 0 {
		return fieldError("urls", "is required: at least one ldap:// or ldaps:// URL")
	}
	tlsUsed := false
	for i, raw := range c.URLs {
		u, err := parseURL(raw)
		if err != nil {
			return fieldError(fmt.Sprintf("urls[%d]", i), "%q: %v", raw, err)
		}
		tlsUsed = tlsUsed || u.Scheme == "ldaps" || c.StartTLS
	}
	if !tlsUsed {
		for _, f := range []struct {
			name string
			set  bool
		}{{"cafile", c.CAFile != ""}, {"servername", c.ServerName != ""}, {"insecureskipverify", c.InsecureSkipVerify}} {
			if f.set {
				return fieldError(f.name, "is set but no connection uses TLS: set starttls: true or use ldaps:// URLs")
			}
		}
	}

	if c.BindDN != "" {
		if _, err := goldap.ParseDN(c.BindDN); err != nil {
			return fieldError("binddn", "%q is not a valid DN: %v", c.BindDN, err)
		}
		switch {
		case c.BindPasswordFile == "" && c.BindPasswordEnv == "":
			return fieldError("bindpasswordfile", "or bindpasswordenv is required with binddn")
		case c.BindPasswordFile != "" && c.BindPasswordEnv != "":
			return fieldError("bindpasswordfile", "and bindpasswordenv are both set: choose one")
		case c.BindPasswordEnv != "" && !envName.MatchString(c.BindPasswordEnv):
			// Not quoted: it may be the password itself, written where
			// the variable's name belongs.
			return fieldError("bindpasswordenv", "is not the name of an environment variable (letters, digits and _, not starting with a digit); "+
				"it names the variable holding the password, never the password itself (the value is not shown)")
		}
	} else if c.BindPasswordFile != "" || c.BindPasswordEnv != "" {
		return fieldError("binddn", "is required when a bind password is configured")
	}

	if err := checkDN("userbasedn", c.UserBaseDN, true); err != nil {
		return err
	}
	if !strings.Contains(c.UserFilter, UserPlaceholder) {
		return fieldError("userfilter", "%q does not contain %s, so it would match the same entries for every user", c.UserFilter, UserPlaceholder)
	}
	if _, err := goldap.CompileFilter(strings.ReplaceAll(c.UserFilter, UserPlaceholder, "x")); err != nil {
		return fieldError("userfilter", "%q is not a valid LDAP filter: %v", c.UserFilter, err)
	}
	// NoUserNameAttr passes as an attribute name.
	if err := cmp.Or(checkAttr("usernameattr", c.UserNameAttr), checkAttr("groupnameattr", c.GroupNameAttr)); err != nil {
		return err
	}

	switch c.GroupSearch {
	case GroupSearchMemberOf:
		if err := checkAttr("memberofattr", c.MemberOfAttr); err != nil {
			return err
		}
		if nestedSearch && c.GroupBaseDN == "" {
			return fieldError("groupbasedn", "is required with nested groups (nestedgroups or inchain): it is where the groups of groups are searched")
		}
	case GroupSearchMember, GroupSearchMemberUID:
	default:
		return fieldError("groupsearch", "%q is not one of memberof, member, memberuid", c.GroupSearch)
	}
	if err := checkDN("groupbasedn", c.GroupBaseDN, c.GroupSearch != GroupSearchMemberOf); err != nil {
		return err
	}
	if c.GroupSearch != GroupSearchMemberOf || nestedSearch {
		if _, err := goldap.CompileFilter(c.GroupFilter); err != nil {
			return fieldError("groupfilter", "%q is not a valid LDAP filter: %v", c.GroupFilter, err)
		}
		if err := checkAttr("memberattr", c.MemberAttr); err != nil {
			return err
		}
	}

	switch {
	case c.Timeout < 0:
		return fieldError("timeout", "%v is negative", c.Timeout)
	case c.PoolSize < 0:
		return fieldError("poolsize", "%v is negative", c.PoolSize)
	case c.SizeLimit < 0:
		return fieldError("sizelimit", "%v is negative", c.SizeLimit)
	case c.NestedGroups < 0 || c.NestedGroups > MaxNestedGroups:
		return fieldError("nestedgroups", "%d is not a depth from 0 to %d", c.NestedGroups, MaxNestedGroups)
	case c.NestedGroups > 0 && c.GroupSearch == GroupSearchMemberUID:
		return fieldError("nestedgroups", "needs groups that list their member groups by DN (groupsearch member or memberof): "+
			"memberuid groups (posixGroup) list user names only")
	case c.InChain && c.GroupSearch == GroupSearchMemberUID:
		return fieldError("inchain", "expands member DNs (Active Directory's groups): it does not apply to groupsearch memberuid")
	case c.InChain && c.NestedGroups > 0:
		return fieldError("nestedgroups", "is not used with inchain: the directory expands every level itself; remove one of them")
	}
	return nil
}

// Warnings lists settings of a valid c that work but weaken security, one
// sentence each, for usher lint.
func (c Config) Warnings() []string {
	c = c.WithDefaults()
	var w []string
	for i, raw := range c.URLs {
		u, err := parseURL(raw)
		if err != nil || u.Scheme != "ldap" || c.StartTLS || isLoopback(u.Hostname()) {
			continue
		}
		what := "searches"
		if c.BindDN != "" {
			what = "the bind password and searches"
		}
		w = append(w, fmt.Sprintf("ldap: urls[%d] %s without starttls: %s cross the network in clear text", i, raw, what))
	}
	if c.InsecureSkipVerify {
		w = append(w, "ldap: insecureskipverify is true: server certificates are not checked, so anyone on the path can impersonate the directory and read the bind password")
	}
	if c.BindDN == "" {
		w = append(w, "ldap: binddn is empty: searches are anonymous, so anyone can read what the resolver reads")
	}
	if c.UserNameAttr == NoUserNameAttr {
		w = append(w, "ldap: usernameattr is none: a user name differing only in case or spaces may get another user's groups")
	}

	return w
}

// envName is the syntax of an environment variable name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// FieldError is a mistake in one setting of Config: Field is its YAML key
// ("urls[1]"), so that lint can place it.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return "ldap: " + e.Field + " " + e.Msg }

func fieldError(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

func parseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "ldap" && u.Scheme != "ldaps" {
		return nil, fmt.Errorf("scheme must be ldap or ldaps, not %q", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, errors.New("no host")
	}
	if u.User != nil {
		return nil, errors.New("credentials belong in binddn and bindpasswordfile, not in the URL")
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("a DN, attributes or filter in the URL are not supported: set userbasedn and userfilter")
	}
	if p := u.Port(); p != "" {
		if _, err := net.LookupPort("tcp", p); err != nil {
			return nil, fmt.Errorf("bad port %q", p)
		}
	}
	return u, nil
}

func isLoopback(host string) bool {
	return host == "localhost" || net.ParseIP(host).IsLoopback() // false for a nil IP
}

func checkDN(field, dn string, required bool) error {
	if dn == "" {
		if required {
			return fieldError(field, "is required")
		}
		return nil
	}
	if _, err := goldap.ParseDN(dn); err != nil {
		return fieldError(field, "%q is not a valid DN: %v", dn, err)
	}
	return nil
}

// attrDesc is an attribute description: a name (letter, then letters,
// digits, hyphens) or a numeric OID, optionally with options (";binary").
var attrDesc = regexp.MustCompile(`^(?:[A-Za-z][A-Za-z0-9-]*|[0-9][0-9.]*)(?:;|$)`)

func checkAttr(field, attr string) error {
	if attr == "" {
		return fieldError(field, "is required")
	}
	if !attrDesc.MatchString(attr) {
		return fieldError(field, "%q is not an attribute name", attr)
	}
	return nil
}
