// Package jsonscan is a small, strict JSON reader over a string, and a
// JSON string encoder, for the admission webhook's hot path.
//
// The webhook reads a handful of fields from an AdmissionReview and from
// the object in it. Decoding them with encoding/json (v1 or v2) costs
// several times the handler's whole latency budget (docs/benchmarks.md
// has the figures and the decision), so the webhook walks the document
// once with a Scanner instead.
//
// Rules this package keeps:
//
//   - It accepts exactly RFC 8259 JSON, the grammar encoding/json
//     accepts: the same nesting limit (10000), the same string unescaping
//     (surrogate pairs joined; lone surrogates and invalid UTF-8 replaced
//     by U+FFFD). Fuzz targets in this package compare it with
//     encoding/json on validity, on decoded strings and on AppendString;
//     their seed corpora live in testdata/fuzz and run with go test.
//   - Strings without escapes are returned as substrings of the input:
//     reading a field allocates nothing.
//   - Objects are read declaratively: a Keys lists the member names a
//     reader wants, by index; Members yields the index of each wanted
//     member, skips (and validates) the others, and fails on a wanted
//     member that appears twice. encoding/json would keep the last one;
//     a security decision must not guess which one the sender meant.
//   - Errors name the field ("request.userInfo.username: found a number,
//     want a string") or the byte offset of a syntax error; the first
//     error wins and later reads are no-ops, so callers check Err once.
package jsonscan
