package localcluster

import (
	"context"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

var bootstrapEffective = bootstrap.EffectiveSynchronousStandbyNames

// ApplySettings makes the members match s.Parameters and s.Synchronous, as the steps topology decides
// (Reconcile): a configure step rewrites every member's settings with what bootstrap renders for its
// current role (the primary's synchronous_standby_names is the effective value for the standbys streaming
// now) and reloads the running ones; each member whose PostgreSQL then waits for a restart
// (pg_settings.pending_restart) is restarted, one at a time, standbys first and the primary last, or the
// primary first when it lowers a setting a hot standby must not have below its primary's. Changing only
// the synchronous settings never restarts anything; stopped members get the new settings on disk and no
// restart. It returns the names restarted, in order.
func (m *Manager) ApplySettings(ctx context.Context, s Spec) (restarted []string, err error) {
	done, err := m.Reconcile(ctx, s)
	for _, step := range done {
		if step.Kind == topology.StepRestart {
			restarted = append(restarted, step.Node)
		}
	}
	return restarted, err
}

// EnforceDurability applies on the running primary the
// synchronous_standby_names that data durability asks for with the standbys
// streaming now ("preferred": the number lowered to them, "" when none;
// "required": the configured value) and returns the value in force and
// whether replication is degraded: fewer named standbys streaming than
// Synchronous.Number. Between applies the durability watcher does the same
// ("preferred" only): EnforceDurability stops it, removes its ALTER SYSTEM
// value, writes pgnvme.conf, and starts it again when it returns (with
// "required" it stays stopped).
func (m *Manager) EnforceDurability(ctx context.Context, s Spec) (value string, degraded bool, err error) {
	resume, err := m.pauseWatcher(ctx, s, &err)
	if err != nil {
		return "", false, err
	}
	defer resume()
	major, err := m.PostgresMajor(ctx)
	if err != nil {
		return "", false, err
	}
	st, err := m.Observe(ctx, s)
	if err != nil {
		return "", false, err
	}
	var primary *Member
	var streaming []string
	st = slices.DeleteFunc(st, func(x Status) bool { _, ok := s.member(x.Name); return !ok }) // former members: Reconcile removes them
	for _, x := range st {
		switch {
		case x.State == StateRunning && x.Role == topology.RolePrimary:
			if primary != nil {
				return "", false, fmt.Errorf("cluster %s has more than one running primary (%s, %s): resolve it by hand", s.Name, primary.Name, x.Name)
			}
			p := x.Member
			primary = &p
		case x.Streaming:
			streaming = append(streaming, x.Name)
		}
	}
	if primary == nil {
		return "", false, fmt.Errorf("cluster %s has no running primary: reconcile it first", s.Name)
	}
	value, err = m.effective(s, major, *primary, streaming)
	if err != nil {
		return "", false, err
	}
	degraded = len(streaming) < s.Synchronous.Number
	if err := m.setSynchronousNames(ctx, *primary, value); err != nil {
		return "", degraded, err
	}
	// After pgnvme.conf has the value: no reload in between runs with an older one.
	if err := m.clearOverride(ctx, *primary); err != nil {
		return "", degraded, err
	}
	conn, err := m.connect(ctx, *primary)
	if err != nil {
		return "", degraded, err
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if err := conn.WaitSetting(ctx, "synchronous_standby_names", value, m.streamTimeout); err != nil {
		return "", degraded, err
	}
	if degraded {
		tflog.Warn(ctx, fmt.Sprintf("cluster %s: synchronous replication is degraded", s.Name), map[string]any{
			"streaming": streaming, "number": s.Synchronous.Number, "synchronous_standby_names": value,
		})
	}
	return value, degraded, nil
}
