package server

import (
	"context"
	"log/slog"
)

// AuditMessage is the message of every audit record the server writes.
const AuditMessage = "audit"

// SplitAudit returns a handler that sends audit records (message
// AuditMessage) to audit and every other record to logs (--audit-log).
func SplitAudit(logs, audit slog.Handler) slog.Handler {
	return &splitHandler{logs: logs, audit: audit}
}

type splitHandler struct {
	logs, audit slog.Handler
}

func (h *splitHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.logs.Enabled(ctx, l) || h.audit.Enabled(ctx, l)
}

func (h *splitHandler) Handle(ctx context.Context, r slog.Record) error {
	to := h.logs
	if r.Message == AuditMessage {
		to = h.audit
	}
	if !to.Enabled(ctx, r.Level) {
		return nil
	}
	return to.Handle(ctx, r)
}

func (h *splitHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &splitHandler{logs: h.logs.WithAttrs(as), audit: h.audit.WithAttrs(as)}
}

func (h *splitHandler) WithGroup(name string) slog.Handler {
	return &splitHandler{logs: h.logs.WithGroup(name), audit: h.audit.WithGroup(name)}
}
