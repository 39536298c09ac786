// Package jsonscan is a small, strict JSON reader over a string, and a
// JSON string encoder, for the admission webhook's hot path.
//
// Decoding the few fields the webhook reads with encoding/json (v1 or v2)
// costs several times what this does (docs/benchmarks.md), so the webhook
// walks the document once with a Scanner instead.
//
// Rules this package keeps:
//
//   - It accepts exactly what encoding/json accepts (RFC 8259, nesting
//     limit 10000) and unescapes strings as it does; the fuzz targets
//     compare the two.
//   - Strings without escapes are returned as substrings of the input:
//     reading a field allocates nothing.
//   - Members yields the wanted members of an object (Keys) by index,
//     skips and validates the others, and fails on a wanted member that
//     appears twice: a security decision must not guess which one the
//     sender meant (encoding/json keeps the last).
//   - Errors name the field or the byte offset of a syntax error; the
//     first error wins, so callers check Err once.
package jsonscan
