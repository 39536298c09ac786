package defaults_test

import (
	"testing"
	"time"

	"github.com/usherhq/usher/internal/defaults"
)

func TestPositive(t *testing.T) {
	for _, tt := range []struct{ in, want time.Duration }{{0, time.Second}, {-1, time.Second}, {2, 2}} {
		got := tt.in
		defaults.Positive(&got, time.Second)
		if got != tt.want {
			t.Errorf("Positive(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	f := float32(0)
	if defaults.Positive(&f, 50); f != 50 {
		t.Errorf("float32: %v", f)
	}
}
