package policy

import (
	"regexp"
	"strings"
	"testing"
)

// ValidQueueName is YuniKorn's QueueNameRegExp.
func TestValidQueueName(t *testing.T) {
	re := regexp.MustCompile(`^[a-zA-Z0-9_:#/@-]{1,64}$`)
	for _, s := range []string{"", "a", "a.b", "a b", "é", "john_dot_doe@example_dot_com", "system:serviceaccount:a:b", "#/@-_",
		strings.Repeat("x", 64), strings.Repeat("x", 65), "a\x00", "A-Z"} {
		if got, want := ValidQueueName(s), re.MatchString(s); got != want {
			t.Errorf("ValidQueueName(%q) = %v, YuniKorn's pattern says %v", s, got, want)
		}
	}
}
