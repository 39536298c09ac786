// Package defaults fills the unset numeric options of an Options struct.
package defaults

// Positive sets *p to def when it is zero or negative.
func Positive[T ~int | ~int64 | ~float32 | ~float64](p *T, def T) {
	if *p <= 0 {
		*p = def
	}
}
