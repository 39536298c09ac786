package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	arv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/usherhq/usher/acl"
	"github.com/usherhq/usher/admission/settings"
	"github.com/usherhq/usher/config"
	"github.com/usherhq/usher/identity"
	"github.com/usherhq/usher/impact"
	"github.com/usherhq/usher/policy"
	"github.com/usherhq/usher/serving"
)

// delegation decides u's change of cur (in service) into cfg under cur's
// delegatedAdministration (docs/delegated-administration.md): nothing to
// admit, a denial, or in warn mode (or failing open) the warnings.
func (s *Server) delegation(ctx context.Context, cur *serving.State, cfg *config.Config, name string, u authenticationv1.UserInfo) (warn []string, denied bool) {
	old := cur.Config()
	a := old.Admission
	if !a.Delegated || a.TrustedSetter(u.Username, u.Groups) {
		return nil, false
	}
	edits, why := impact.Edits(old, cfg), []string(nil)
	var in identity.Info
	var err error
	if len(edits) > 0 { // a write that changes nothing costs no group lookup
		in, err = cur.Identify(ctx, a.Partition, u.Username, u.Groups)
	}
	switch {
	case len(edits) == 0:
	case err != nil:
		s.log.Error("delegated administration: group lookup failed", "user", u.Username, "err", err)
		why = []string{fmt.Sprintf("the groups of user %q cannot be established, so no change can be authorized", u.Username)}
	default:
		sub := acl.NewSubject(u.Username, in.Groups)
		for _, e := range edits {
			cp, err := old.Snapshot.Partition(e.Partition)
			if err != nil { // a new partition, or the admission settings: Identify found a.Partition
				cp, _ = old.Snapshot.Partition(a.Partition)
			}
			d, _ := cp.Decide(e.Admin, sub, policy.Admin) // an error denies
			switch {
			case e.Admin != "" && !d.Allowed:
				why = append(why, fmt.Sprintf("%s: needs admin on %s/%s (no adminacl of it or its parents names you)", e, cp.Name(), e.Admin))
			case e.Admin == "" && (cp.AdminACL() == nil || !cp.AdminACL().Allows(sub)):
				why = append(why, fmt.Sprintf("%s: needs the adminacl of partition %s", e, cp.Name()))
			}
		}
		for _, p := range impact.DiffConfigs(old, cfg, impact.Options{Subjects: []impact.Subject{{User: u.Username, Groups: in.Groups}}}).Partitions {
			for _, q := range p.Queues {
				for _, c := range q.Changes {
					if c.Kind == impact.GivenSubject && !c.Gained && c.Right == "admin" && p.Status == impact.Both && q.Status == impact.Both {
						why = append(why, fmt.Sprintf("removes your own admin right on %s/%s", p.Name, q.Queue))
					}
				}
			}
		}
	}
	enforce := s.enforcesDelegation(a)
	s.log.Info("configuration change under delegated administration", "configmap", name, "user", u.Username, "changes", edits, "refused", why, "enforced", enforce)
	if enforce && len(why) > 0 {
		return []string{fmt.Sprintf("usher: user %q may not make these changes (delegatedAdministration, docs/delegated-administration.md):\n  %s",
			u.Username, strings.Join(why, "\n  "))}, true
	}
	for _, w := range why { // one a line: a warning header holds no newline
		warn = append(warn, fmt.Sprintf("usher: user %q may not make this change, admitted (delegatedAdministration is not enforced): %s", u.Username, w))
	}
	return warn, false
}

// enforcesDelegation says a refuses what delegated administration does not
// allow: enforce, behind a registration that fails closed.
func (s *Server) enforcesDelegation(a *settings.Compiled) bool {
	return a.Delegated && !a.DelegatedWarn && !s.failOpen.Load()
}

// checkRegistration, under delegatedAdministration enforce, reads the live
// validate-config.usher.io (or what --manage-webhooks registers): failing
// open, usher only warns. Unreadable, it is taken as usher webhook renders it.
func (s *Server) checkRegistration(cfg *config.Config) {
	open := false
	switch enforce := cfg.Admission.Config().DelegatedAdministration == settings.DelegationEnforce; {
	case enforce && s.opts.ManageWebhooks:
		open = len(s.opts.Webhooks.ConfigMaps) == 0
	case enforce && s.kubeErr == nil:
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		v, err := s.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, s.opts.Webhooks.Name, metav1.GetOptions{})
		open = err == nil && !slices.ContainsFunc(v.Webhooks, func(w arv1.ValidatingWebhook) bool {
			return w.Name == "validate-config.usher.io" && w.FailurePolicy != nil && *w.FailurePolicy == arv1.Fail
		})
	}
	if open {
		s.log.Error("delegatedAdministration is enforce but ValidatingWebhookConfiguration " + s.opts.Webhooks.Name +
			" does not register validate-config.usher.io with failurePolicy Fail: usher only warns until it does (--guard-config-map; apply what usher webhook prints)")
	}
	s.failOpen.Store(open)
}
