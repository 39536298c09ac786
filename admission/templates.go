package admission

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
)

// stampTemplates appends to patch (a JSON Patch, or nil) the operations
// that give each template of custom resource k the object's stamp after
// the patch (written, else pm's), for the operator to copy onto its pods.
func stampTemplates(k *kindInfo, pm *metaView, obj string, patch []byte, written *[2]string) []byte {
	want := map[string]string{}
	switch {
	case written[0] != "":
		want[UserInfoAnnotation] = written[0]
		if written[1] != "" {
			want[DirectoryGroupsAnnotation] = written[1]
		}
	case !pm.has(slotUserInfo):
		return patch
	default:
		want[UserInfoAnnotation] = pm.val(slotUserInfo)
		if pm.has(slotDirGroups) {
			want[DirectoryGroupsAnnotation] = pm.val(slotDirGroups)
		}
	}
	var o any
	if json.Unmarshal([]byte(obj), &o) != nil {
		return patch
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	var add []op
	for _, path := range k.templates {
		eachAt(o, path, "", func(ptr string, m map[string]any) {
			if m == nil {
				add = append(add, op{"add", ptr, map[string]any{"annotations": want}})
				return
			}
			ann, ok := m["annotations"].(map[string]any)
			if !ok {
				add = append(add, op{"add", ptr + "/annotations", want})
				return
			}
			for _, key := range slices.Sorted(maps.Keys(want)) {
				if ann[key] != want[key] {
					add = append(add, op{"add", ptr + "/annotations/" + escapePointer(key), want[key]})
				}
			}
		})
	}
	if len(add) == 0 {
		return patch
	}
	b, _ := json.Marshal(add)
	if len(patch) == 0 {
		return b
	}
	return append(append(slices.Clip(patch[:len(patch)-1]), ','), b[1:]...)
}

// eachAt calls f with the JSON Pointer and value of every object at path
// under v ("*": every member or item), in order; nil for a missing last
// member (a template without metadata).
func eachAt(v any, path []string, ptr string, f func(string, map[string]any)) {
	m, isMap := v.(map[string]any)
	switch {
	case len(path) == 0:
		if isMap {
			f(ptr, m)
		}
	case isMap && path[0] == "*":
		for _, key := range slices.Sorted(maps.Keys(m)) {
			eachAt(m[key], path[1:], ptr+"/"+escapePointer(key), f)
		}
	case isMap:
		if next, ok := m[path[0]]; ok {
			eachAt(next, path[1:], ptr+"/"+escapePointer(path[0]), f)
		} else if len(path) == 1 {
			f(ptr+"/"+escapePointer(path[0]), nil)
		}
	case path[0] == "*":
		list, _ := v.([]any)
		for i, item := range list {
			eachAt(item, path[1:], ptr+"/"+strconv.Itoa(i), f)
		}
	}
}
