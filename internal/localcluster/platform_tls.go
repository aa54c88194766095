package localcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// The platform's side of a cluster's TLS: what Plan says of it and what Create and Update do first
// (tls.go holds the decision and the files).

// primaryOf is the name of the running primary among st, "" when there is not exactly one.
func primaryOf(st []Status) string {
	var found []string
	for _, x := range st {
		if x.State == StateRunning && x.Role == string(localnode.RolePrimary) {
			found = append(found, x.Name)
		}
	}
	if len(found) != 1 {
		return ""
	}
	return found[0]
}

// prepareTLS decides what the apply does with ls's TLS (planTLS, st the members as observed) at the
// Manager's clock's now and writes the certificates it makes or renews.
func (m *Manager) prepareTLS(ls Spec, st []Status) (tlsPlan, error) {
	now := m.waitClock().Now()
	p, err := m.planTLS(ls, ls.tlsDiffer, primaryOf(st), now)
	if err != nil {
		return p, fmt.Errorf("planning the cluster's TLS: %w", err)
	}
	if err := m.writeTLSFiles(ls, p, now); err != nil {
		return p, fmt.Errorf("writing the cluster's certificates: %w", err)
	}
	return p, nil
}

// planTLSInto adds to out what the apply does with ls's TLS (its lines after the repairs, for a cluster
// that exists, decided at the Manager's clock's now) and the certificates as they will be; observed are the
// members as Plan read them.
func (m *Manager) planTLSInto(out *cluster.Plan, ls Spec, exists bool, observed []Status) error {
	if ls.TLS == nil && len(ls.tlsDiffer) == 0 {
		return nil
	}
	tp := tlsPlan{NewCA: true} // a create, resumed or not, may make every certificate
	if exists {
		var err error
		if tp, err = m.planTLS(ls, ls.tlsDiffer, primaryOf(observed), m.waitClock().Now()); err != nil {
			return fmt.Errorf("planning the cluster's TLS: %w", err)
		}
		if lines := tp.lines(); len(lines) > 0 {
			if out.Actions != "" {
				out.Actions += "\n"
			}
			out.Actions += strings.Join(lines, "\n")
		}
	}
	out.TLS = plannedTLS(ls, m.engine.Superuser(), tp)
	return nil
}

// applyTLS writes the certificates ls's TLS needs now and turns TLS on or off where the members'
// configuration differs (the detached scripts paused meanwhile: their clients follow the change), then
// reloads the members whose certificate was renewed.
func (p *Platform) applyTLS(ctx context.Context, m *Manager, ls *Spec) (err error) {
	if ls.TLS == nil && len(ls.tlsDiffer) == 0 {
		return nil
	}
	st, err := m.Observe(ctx, *ls)
	if err != nil {
		return err
	}
	tp, err := m.prepareTLS(*ls, st)
	if err != nil || tp.empty() {
		return err
	}
	tflog.Info(ctx, "cluster "+ls.Name+": TLS", map[string]any{"steps": strings.Join(tp.lines(), "; ")})
	// The scripts connect as the members' TLS is: stopped before it changes, started after for what it
	// became (ls is updated as each member changes, also when one fails).
	if err := m.stopWatcher(ctx, *ls, false); err != nil {
		return err
	}
	defer func() { err = errors.Join(err, m.syncWatcher(context.WithoutCancel(ctx), *ls)) }()
	if err := m.applyTLS(ctx, ls, tp, st); err != nil {
		return fmt.Errorf("applying the cluster's TLS: %w", err)
	}
	ls.tlsDiffer = nil
	return nil
}
