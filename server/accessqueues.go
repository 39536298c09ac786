package server

import (
	"net/http"
	"time"

	"github.com/usherhq/usher/answer"
	"github.com/usherhq/usher/auth"
)

// serveQueues answers "queues": true: every queue of the partition with
// what the user may do there, depth first (the tree usher access prints),
// and the user's groups with their sources. The caller was authorized as
// for any question about that user.
func (s *Server) serveQueues(w http.ResponseWriter, r *http.Request, req *AccessRequest, caller auth.User) {
	switch {
	case req.Queue != "", req.Action != "", req.Place, req.Tags != nil, req.Application != nil, req.TargetQueue != "", req.Explain:
		badRequest(w, http.StatusBadRequest, "queues lists every queue of the partition: give only partition, user and groups")
		return
	}
	start := time.Now()
	g := s.serving.Current()
	res, err := g.Access(r.Context(), req.Partition, req.User, req.Groups)
	if err != nil {
		s.decisionError(w, r, g, caller, req, "queues", err)
		return
	}
	s.metrics.decisionLatency.Observe(time.Since(start).Seconds())
	s.audit("access", "user", res.Identity.User, "groups", res.Identity.Groups, "partition", res.Partition, "action", "queues", "allowed", true,
		"caller", caller.Name, "requestID", requestID(r))
	s.answer(w, answer.Queues(res))
}
