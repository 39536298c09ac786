package serving

// Authorizers exposes the authorizers bound to a generation to the tests.
var Authorizers = authorizers
