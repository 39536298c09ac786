package httperr

import (
	"encoding/json"
	"net/http/httptest"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, tc := range []struct{ msg, id string }{
		{"plain", ""}, {`quote " <tag> & é` + "\n\x00\xff", "req-1"}, {"", ""},
	} {
		rec := httptest.NewRecorder()
		Write(rec, 418, tc.msg, tc.id)
		if rec.Code != 418 || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("%q: code %d, headers %v", tc.msg, rec.Code, rec.Header())
		}
		var got map[string]string
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatalf("%q: %v in %s", tc.msg, err, rec.Body)
		}
		want := map[string]string{"error": tc.msg}
		if tc.id != "" {
			want["requestID"] = tc.id
		}
		wantMsg, _ := json.Marshal(tc.msg)
		var back string
		_ = json.Unmarshal(wantMsg, &back)
		want["error"] = back // invalid UTF-8 reads back as U+FFFD, as with encoding/json
		if len(got) != len(want) || got["error"] != want["error"] || got["requestID"] != want["requestID"] {
			t.Fatalf("%q: body %v, want %v", tc.msg, got, want)
		}
	}
}
