package admission

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// UserInfoAnnotation is the annotation that carries the submitter's
// identity, as YuniKorn's scheduler reads it.
const UserInfoAnnotation = "yunikorn.apache.org/user.info"

// LegacyUserLabel is YuniKorn's deprecated user label (seed 002).
const LegacyUserLabel = "yunikorn.apache.org/username"

// UserInfo is the content of the user.info annotation:
// {"user":"alice","groups":["dev","system:authenticated"]}.
type UserInfo struct {
	User   string   `json:"user"`
	Groups []string `json:"groups"`
}

// ParseUserInfo parses and checks an annotation value: it must be one JSON
// object whose "user" is a non-empty string and whose "groups", if present,
// is an array of non-empty strings. Member names are case sensitive (the
// scheduler reads "user", not "User"); unknown members are ignored, as the
// scheduler ignores them; a repeated "user" or "groups" is an error. The
// error says what is wrong.
func ParseUserInfo(s string) (UserInfo, error) {
	var u UserInfo
	d := scanner{s: s}
	if d.peek() != '{' {
		return u, errors.New(`it is not a JSON object {"user":"…","groups":["…"]}`)
	}
	d.object("")
	var seen uint8
	hasUser, hasUsername := false, false
	first := true
	for {
		key, ok := d.next(&first)
		if !ok {
			break
		}
		switch key {
		case "user":
			d.dup(&seen, 1, key)
			hasUser = d.peek() != 'n'
			u.User = d.stringField(`"user"`)
		case "groups":
			d.dup(&seen, 2, key)
			u.Groups = d.stringList(`"groups"`)
		case "username":
			hasUsername = true
			d.skip()
		default:
			d.skip()
		}
	}
	d.end()
	if d.err != nil {
		return UserInfo{}, fmt.Errorf("it is not valid JSON of the form {\"user\":\"…\",\"groups\":[\"…\"]}: %w", d.err)
	}
	if !hasUser || u.User == "" {
		if hasUsername && !hasUser {
			return UserInfo{}, errors.New(`"user" is missing or empty (the member is "user", not "username")`)
		}
		return UserInfo{}, errors.New(`"user" is missing or empty`)
	}
	for i, g := range u.Groups {
		if g == "" {
			return UserInfo{}, fmt.Errorf(`"groups"[%d] is empty`, i)
		}
	}
	return u, nil
}

// String renders the annotation value, the inverse of ParseUserInfo.
func (u UserInfo) String() string { return string(appendUserInfo(nil, u.User, u.Groups)) }

// MarshalJSON encodes u as the annotation's JSON (groups always present).
func (u UserInfo) MarshalJSON() ([]byte, error) { return appendUserInfo(nil, u.User, u.Groups), nil }

var _ json.Marshaler = UserInfo{}

// sameIdentity reports whether u names user with exactly the given groups
// (in any order, ignoring repeats).
func (u UserInfo) sameIdentity(user string, groups []string) bool {
	if u.User != user {
		return false
	}
	for _, g := range u.Groups {
		if !contains(groups, g) {
			return false
		}
	}
	for _, g := range groups {
		if !contains(u.Groups, g) {
			return false
		}
	}
	return true
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// appendUserInfo appends {"user":…,"groups":[…]}.
func appendUserInfo(dst []byte, user string, groups []string) []byte {
	dst = append(dst, `{"user":`...)
	dst = appendJSONString(dst, user)
	dst = append(dst, `,"groups":[`...)
	for i, g := range groups {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, g)
	}
	return append(dst, "]}"...)
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
		dst = appendJSONString(dst, op.Op)
		dst = append(dst, `,"path":`...)
		dst = appendJSONString(dst, op.Path)
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
// /spec/template/metadata, ...) to the annotation value info. It adds the
// annotation to an existing annotations map, creates the map when it is
// absent or null, and creates the metadata object itself when that is
// absent or null, so the patch always applies.
func appendStampPatch(dst []byte, k *kindInfo, m *metaView, info []byte) []byte {
	dst = append(dst, `[{"op":"add","path":`...)
	switch {
	case m.annotations:
		dst = appendJSONString(dst, k.annotationPath)
		dst = append(dst, `,"value":`...)
		dst = appendJSONString(dst, info)
	case m.present:
		dst = appendJSONString(dst, k.annotationsPath)
		dst = append(dst, `,"value":{`...)
		dst = appendJSONString(dst, UserInfoAnnotation)
		dst = append(dst, ':')
		dst = appendJSONString(dst, info)
		dst = append(dst, '}')
	default:
		dst = appendJSONString(dst, k.metaPath)
		dst = append(dst, `,"value":{"annotations":{`...)
		dst = appendJSONString(dst, UserInfoAnnotation)
		dst = append(dst, ':')
		dst = appendJSONString(dst, info)
		dst = append(dst, "}}"...)
	}
	return append(dst, "}]"...)
}
