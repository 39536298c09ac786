package admission

import (
	"encoding/json"
	"strconv"

	"github.com/usherhq/usher/internal/jsonscan"
)

// Member names stampTemplates reads: a template's annotations, and the stamp's among them.
var templateMetaKeys, stampAnnotationKeys = jsonscan.NewKeys("annotations"), jsonscan.NewKeys(UserInfoAnnotation, DirectoryGroupsAnnotation)

// maxTemplatesPatch bounds the patch stamping a custom resource's
// templates: the API server takes no larger request, so stores no larger object.
const maxTemplatesPatch = 3 << 20

// stampTemplates appends to patch (a JSON Patch, or nil) the operations
// that give each template of custom resource k the object's stamp after
// the patch (written, else pm's), for the operator to copy onto its pods;
// false when they would pass maxTemplatesPatch.
func stampTemplates(k *kindInfo, pm *metaView, obj string, patch []byte, written *[2]string) ([]byte, bool) {
	keys, vals := []string{UserInfoAnnotation, DirectoryGroupsAnnotation}, *written
	switch {
	case written[0] != "":
	case !pm.has(slotUserInfo):
		return patch, true
	default:
		vals = [2]string{pm.val(slotUserInfo), pm.val(slotDirGroups)}
	}
	if vals[1] == "" {
		keys = keys[:1]
	}
	want := map[string]string{}
	for i, key := range keys {
		want[key] = vals[i]
	}
	ann, _ := json.Marshal(want)
	meta := `{"annotations":` + string(ann) + `}`
	var ops []byte
	ptr := make([]byte, 0, 512) // the pointers, reallocated only past this length
	add := func(ptr []byte, suffix, value string) {
		if len(ops) <= maxTemplatesPatch {
			ops = append(jsonscan.AppendString(append(ops, `,{"op":"add","path":`...), append(ptr, suffix...)), `,"value":`...)
			ops = append(append(ops, value...), '}')
		}
	}
	for _, path := range k.templates {
		d := jsonscan.New(obj)
		eachAt(&d, path, ptr[:0], func(ptr []byte, missing bool) {
			if missing {
				add(ptr, "", meta)
				return
			}
			var seen [2]bool
			found := false
			m := d.Members("", templateMetaKeys)
			for i := m.Next(); i >= 0; i = m.Next() {
				if d.Peek() != '{' {
					d.Skip()
					continue
				}
				found = true
				am := d.Members("", stampAnnotationKeys)
				for j := am.Next(); j >= 0; j = am.Next() {
					if d.Peek() == '"' {
						seen[j] = d.StringField("") == vals[j]
					} else {
						d.Skip()
					}
				}
			}
			if !found {
				add(ptr, "/annotations", string(ann))
				return
			}
			for i, key := range keys {
				if !seen[i] {
					add(ptr, "/annotations/"+escapePointer(key), string(jsonscan.AppendString(nil, vals[i])))
				}
			}
		})
		if d.Err() != nil {
			return patch, true
		}
	}
	switch {
	case len(ops) > maxTemplatesPatch:
		return nil, false
	case len(ops) == 0:
		return patch, true
	case len(patch) == 0:
		return append(append([]byte{'['}, ops[1:]...), ']'), true
	}
	return append(append(patch[:len(patch)-1:len(patch)-1], ops...), ']'), true
}

// eachAt consumes the value at d, calling f at every object at path under
// it ("*": every member or item) with d before that object, or with
// missing for a missing last member (a template without metadata); ptr,
// the JSON Pointer so far, is f's until f returns.
func eachAt(d *jsonscan.Scanner, path []string, ptr []byte, f func(ptr []byte, missing bool)) {
	switch c := d.Peek(); {
	case len(path) == 0 && c == '{':
		f(ptr, false)
	case len(path) > 0 && c == '{':
		d.Object("")
		found := false
		for first := true; ; {
			key, ok := d.Next(&first)
			if !ok {
				break
			}
			if path[0] == "*" || key == path[0] {
				found = true
				eachAt(d, path[1:], append(append(ptr, '/'), escapePointer(key)...), f)
			} else {
				d.Skip()
			}
		}
		if !found && len(path) == 1 && path[0] != "*" {
			f(append(append(ptr, '/'), escapePointer(path[0])...), true)
		}
	case len(path) > 0 && c == '[' && path[0] == "*":
		d.Array("")
		for i, first := 0, true; d.Elem(&first); i++ {
			eachAt(d, path[1:], strconv.AppendInt(append(ptr, '/'), int64(i), 10), f)
		}
	default:
		d.Skip()
	}
}
