package admission

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/internal/jsonscan"
)

// UserInfoAnnotation is the annotation that carries the submitter's
// identity, as YuniKorn's scheduler reads it.
const UserInfoAnnotation = settings.UserInfoAnnotation

// LegacyUserLabel is YuniKorn's deprecated user label, which its
// admission controller honours with bypassAuth.
const LegacyUserLabel = "yunikorn.apache.org/username"

// UserInfo is the content of the user.info annotation:
// {"user":"alice","groups":["dev","system:authenticated"]}.
type UserInfo struct {
	User   string   `json:"user"`
	Groups []string `json:"groups"`
}

// ParseUserInfo parses and checks an annotation value. It accepts only
// values that every known reader decodes to the same identity, so that the
// identity usher judges is the identity the scheduler uses: one JSON object
// whose members are exactly "user" (a non-empty string) and optionally
// "groups" (null, or an array of non-empty strings), each at most once,
// with member names written plainly (no escapes), valid UTF-8 throughout
// and no \u escape of a lone UTF-16 surrogate. Names are decoded exactly as
// encoding/json decodes them.
//
// The strictness is the point: YuniKorn decodes the annotation with Go's
// encoding/json, which matches member names without regard to case (with
// Unicode folding: "USER", "ſ" for "s", "K" for "k") and lets the last
// match win, and replaces invalid UTF-8 and lone surrogates with U+FFFD.
// A value such as {"user":"me","groups":[],"User":"alice"} would be judged
// as "me" by an exact reader and run as "alice" by the scheduler. Any
// other member, a repeated member, or a member name that only folds to
// "user" or "groups" is refused, and the error names it.
func ParseUserInfo(s string) (UserInfo, error) {
	u, _, err := parseUserInfo(s, math.MaxInt)
	return u, err
}

// parseUserInfo is ParseUserInfo keeping at most max groups; n counts
// them all.
func parseUserInfo(s string, max int) (u UserInfo, n int, err error) {
	if !utf8.ValidString(s) {
		return u, 0, errors.New("it is not valid UTF-8: readers would replace the invalid bytes and could disagree on the identity")
	}
	d := jsonscan.New(s)
	if d.Peek() != '{' {
		return u, 0, errors.New(`it is not a JSON object {"user":"…","groups":["…"]}`)
	}
	d.Object("")
	hasUser, hasGroups := false, false
	first := true
	for {
		raw, ok := d.NextRaw(&first)
		if !ok {
			break
		}
		switch raw {
		case "user":
			if hasUser {
				return UserInfo{}, 0, errors.New(`duplicate member "user": readers disagree on which one counts`)
			}
			hasUser = true
			u.User = d.StringField(`"user"`)
		case "groups":
			if hasGroups {
				return UserInfo{}, 0, errors.New(`duplicate member "groups": readers disagree on which one counts`)
			}
			hasGroups = true
			u.Groups, n = d.StringList(`"groups"`, max)
		default:
			if d.Err() != nil {
				break
			}
			return UserInfo{}, 0, memberError(raw)
		}
	}
	d.End()
	if d.Err() != nil {
		return UserInfo{}, 0, fmt.Errorf("it is not valid JSON of the form {\"user\":\"…\",\"groups\":[\"…\"]}: %w", d.Err())
	}
	if u.User == "" {
		return UserInfo{}, 0, errors.New(`"user" is missing or empty`)
	}
	for i, g := range u.Groups {
		if g == "" {
			return UserInfo{}, 0, fmt.Errorf(`"groups"[%d] is empty`, i)
		}
	}
	if strings.IndexByte(s, '\\') >= 0 && jsonscan.HasLoneSurrogate(s) {
		return UserInfo{}, 0, errors.New(`it holds a \u escape of half a UTF-16 surrogate pair: readers disagree on what it means`)
	}
	return u, n, nil
}

// memberError explains why a member other than "user" and "groups" is
// refused. raw is the member name as written, without its quotes.
func memberError(raw string) error {
	name := raw
	if strings.IndexByte(raw, '\\') >= 0 {
		name = jsonscan.Unquote(raw)
		return fmt.Errorf(`member name "%s" is written with escapes (it reads as %q): only the plainly written members "user" and "groups" are allowed`,
			raw, name)
	}
	for _, want := range [...]string{"user", "groups"} {
		if strings.EqualFold(name, want) {
			return fmt.Errorf(`member %q is not allowed: the scheduler matches member names without regard to case and would read it as %q; `+
				`only the exact members "user" and "groups" are allowed`, name, want)
		}
	}
	if name == "username" {
		return errors.New(`member "username" is not allowed: the member is "user", not "username"`)
	}
	return fmt.Errorf(`member %q is not allowed: only "user" and "groups" are allowed`, name)
}

// String renders the annotation value, the inverse of ParseUserInfo.
func (u UserInfo) String() string { return string(appendUserInfo(nil, u.User, u.Groups)) }

// MarshalJSON encodes u as the annotation's JSON (groups always present).
func (u UserInfo) MarshalJSON() ([]byte, error) { return appendUserInfo(nil, u.User, u.Groups), nil }

var _ json.Marshaler = UserInfo{}

// sameIdentity reports whether u names user with exactly the given groups
// (in any order, ignoring repeats). Short lists are scanned; longer ones
// go through a set, so the cost is linear in the number of groups.
func (u UserInfo) sameIdentity(user string, groups []string) bool {
	if u.User != user {
		return false
	}
	if len(u.Groups)+len(groups) <= 32 {
		for _, g := range u.Groups {
			if !slices.Contains(groups, g) {
				return false
			}
		}
		for _, g := range groups {
			if !slices.Contains(u.Groups, g) {
				return false
			}
		}
		return true
	}
	// seen[g] says whether g of u.Groups is also in groups.
	seen := make(map[string]bool, len(u.Groups))
	for _, g := range u.Groups {
		seen[g] = false
	}
	for _, g := range groups {
		if _, ok := seen[g]; !ok {
			return false
		}
		seen[g] = true
	}
	for _, in := range seen {
		if !in {
			return false
		}
	}
	return true
}

// appendUserInfo appends {"user":…,"groups":[…]}.
func appendUserInfo(dst []byte, user string, groups []string) []byte {
	dst = append(dst, `{"user":`...)
	dst = jsonscan.AppendString(dst, user)
	dst = append(dst, `,"groups":`...)
	return append(appendList(dst, groups), '}')
}

// appendList appends the JSON array of ss.
func appendList(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonscan.AppendString(dst, s)
	}
	return append(dst, ']')
}

// patchOp is one RFC 6902 JSON Patch operation. Value holds JSON text.
type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// appendPatch appends ops as a JSON Patch document.
func appendPatch(dst []byte, ops ...patchOp) []byte {
	dst = append(dst, '[')
	for i, op := range ops {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"op":`...)
		dst = jsonscan.AppendString(dst, op.Op)
		dst = append(dst, `,"path":`...)
		dst = jsonscan.AppendString(dst, op.Path)
		if op.Value != nil {
			dst = append(dst, `,"value":`...)
			dst = append(dst, op.Value...)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// escapePointer escapes one reference token of a JSON Pointer (RFC 6901):
// "~" becomes "~0" and "/" becomes "~1".
func escapePointer(token string) string {
	if !strings.ContainsAny(token, "~/") {
		return token
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}

// appendStampPatch appends the JSON Patch that sets the user.info
// annotation of the pod metadata of kind k (/metadata,
// /spec/template/metadata, ...) to the annotation value info, and when
// dir is not nil DirectoryGroupsAnnotation to dir. It adds the
// annotations to an existing annotations map (replacing values there),
// creates the map when it is absent or null, and creates the metadata
// object itself when that is absent or null, so the patch always applies.
func appendStampPatch(dst []byte, k *kindInfo, m *metaView, info, dir []byte) []byte {
	dst = append(dst, `[{"op":"add","path":`...)
	entries := func(dst []byte) []byte {
		dst = jsonscan.AppendString(dst, UserInfoAnnotation)
		dst = append(dst, ':')
		dst = jsonscan.AppendString(dst, info)
		if dir != nil {
			dst = append(dst, ',')
			dst = jsonscan.AppendString(dst, DirectoryGroupsAnnotation)
			dst = append(dst, ':')
			dst = jsonscan.AppendString(dst, dir)
		}
		return dst
	}
	switch {
	case m.annotations:
		dst = jsonscan.AppendString(dst, k.annotationPath)
		dst = append(dst, `,"value":`...)
		dst = jsonscan.AppendString(dst, info)
		if dir != nil {
			dst = append(dst, `},{"op":"add","path":`...)
			dst = jsonscan.AppendString(dst, k.dirPath)
			dst = append(dst, `,"value":`...)
			dst = jsonscan.AppendString(dst, dir)
		}
	case m.present:
		dst = jsonscan.AppendString(dst, k.annotationsPath)
		dst = append(dst, `,"value":{`...)
		dst = append(entries(dst), '}')
	default:
		dst = jsonscan.AppendString(dst, k.metaPath)
		dst = append(dst, `,"value":{"annotations":{`...)
		dst = append(entries(dst), "}}"...)
	}
	return append(dst, "}]"...)
}
