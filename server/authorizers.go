package server

import (
	"log/slog"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/engine"
)

// AdmissionAuthorizers returns what usher serve gives
// engine.WithAdmissionAuthorizers: for each generation, the queue and
// delete authorizers that answer from that same generation, so a review
// never mixes two configurations. Group lookup failures are logged to log
// with a request id, which is all the denial shows. usher test builds its
// admission handler with it, so policy tests review objects as serve does.
func AdmissionAuthorizers(log *slog.Logger) func(*engine.Generation) (admission.QueueAuthorizer, admission.DeleteAuthorizer) {
	return func(g *engine.Generation) (admission.QueueAuthorizer, admission.DeleteAuthorizer) {
		return authorizer{g, log}, deleteAuthorizer{g}
	}
}
