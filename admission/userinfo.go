package admission

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/internal/jsonscan"
)

// UserInfoAnnotation carries the submitter's identity YuniKorn reads.
const UserInfoAnnotation = settings.UserInfoAnnotation

// LegacyUserLabel is YuniKorn's deprecated user label, honoured with bypassAuth.
const LegacyUserLabel = "yunikorn.apache.org/username"

// UserInfo is the content of the user.info annotation:
// {"user":"alice","groups":["dev","system:authenticated"]}.
type UserInfo struct {
	User   string   `json:"user"`
	Groups []string `json:"groups"`
}

// ParseUserInfo parses and checks an annotation value: one JSON object of
// exactly a non-empty "user" and optional "groups" (null or non-empty
// strings), each once, written plainly, valid UTF-8 without lone
// surrogates. YuniKorn's encoding/json folds member names and lets the
// last win: {"user":"me","User":"alice"} would run as "alice" (docs/security.md).
func ParseUserInfo(s string) (UserInfo, error) {
	u, _, err := parseUserInfo(s, math.MaxInt)
	return u, err
}

// parseUserInfo is ParseUserInfo keeping at most max groups, counting all in n.
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
		if raw == "user" && hasUser || raw == "groups" && hasGroups {
			return UserInfo{}, 0, fmt.Errorf("duplicate member %q: readers disagree on which one counts", raw)
		}
		switch raw {
		case "user":
			hasUser = true
			u.User = d.StringField(`"user"`)
		case "groups":
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
	if i := slices.Index(u.Groups, ""); i >= 0 {
		return UserInfo{}, 0, fmt.Errorf(`"groups"[%d] is empty`, i)
	}
	if strings.IndexByte(s, '\\') >= 0 && jsonscan.HasLoneSurrogate(s) {
		return UserInfo{}, 0, errors.New(`it holds a \u escape of half a UTF-16 surrogate pair: readers disagree on what it means`)
	}
	return u, n, nil
}

// memberError explains why member raw (as written, unquoted) is refused.
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

// sameIdentity reports whether u names user with the same set of groups.
func (u UserInfo) sameIdentity(user string, groups []string) bool {
	return u.User == user && sets.New(u.Groups...).Equal(sets.New(groups...))
}

// escapePointer escapes one reference token of a JSON Pointer (RFC 6901).
var escapePointer = strings.NewReplacer("~", "~0", "/", "~1").Replace

// stampPatch is the JSON Patch that sets user.info to info (and
// DirectoryGroupsAnnotation to a non-nil dir) on k's pod metadata.
func stampPatch(k *kindInfo, m *metaView, info, dir []byte) []byte {
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	ann := struct {
		Info string `json:"yunikorn.apache.org/user.info"`
		Dir  string `json:"usher.io/directory-groups,omitempty"`
	}{string(info), string(dir)}
	var ops []op
	switch {
	case m.annotations:
		ops = append(ops, op{"add", k.annotationPath, ann.Info})
		if dir != nil {
			ops = append(ops, op{"add", k.dirPath, ann.Dir})
		}
	case m.present:
		ops = append(ops, op{"add", k.annotationsPath, ann})
	default:
		ops = append(ops, op{"add", k.metaPath, map[string]any{"annotations": ann}})
	}
	b, _ := json.Marshal(ops)
	return b
}
