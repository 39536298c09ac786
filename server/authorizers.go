package server

import (
	"log/slog"

	"github.com/usherhq/usher/admission"
	"github.com/usherhq/usher/engine"
	"github.com/usherhq/usher/identity"
)

// AdmissionAuthorizers returns what usher serve gives
// engine.WithAdmissionAuthorizers: for each generation, the queue and
// delete authorizers that answer from that same generation, so a review
// never mixes two configurations, and when the admission partition's
// groups mode is resolve or merge the IdentityResolver that decides the
// groups a review stamps and checks. Group lookup failures are logged to
// log with a request id, which is all the denial shows. usher test builds
// its admission handler with it, so policy tests review objects as serve
// does.
func AdmissionAuthorizers(log *slog.Logger) func(*engine.Generation) admission.Authorizers {
	return func(g *engine.Generation) admission.Authorizers {
		a := admission.Authorizers{Queue: authorizer{g, log}, Delete: deleteAuthorizer{g}}
		if mode, err := g.GroupsMode(g.Config().Admission.Config().Partition); err == nil && mode != identity.ModeGiven {
			a.Identity = authorizer{g, log}
		}
		return a
	}
}
