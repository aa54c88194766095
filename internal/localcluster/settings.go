package localcluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/topology"
)

var bootstrapEffective = bootstrap.EffectiveSynchronousStandbyNames

// ApplySettings makes the members match s.Parameters and s.Synchronous. It
// rewrites every member's settings with what bootstrap renders for its
// current role (the primary's synchronous_standby_names is the effective
// value for the standbys streaming now), asks the primary for the
// pg_settings.context of every changed name and, with
// bootstrap.RestartRequired, either reloads every running member, or
// reloads them and then restarts them one at a time: standbys first in
// priority order, each back streaming (and out of async when the primary
// names it) before the next, the primary last (fast stop and start), after
// which every standby streams again. Changing only the synchronous settings
// never restarts anything. Stopped members get the new settings on disk and
// no restart. The manifest is rewritten with s. It returns the names
// restarted, in order. The durability watcher is stopped while it runs (its
// ALTER SYSTEM value removed from the primary) and started again when it
// returns, also after an error.
func (m *Manager) ApplySettings(ctx context.Context, s Spec) (restarted []string, err error) {
	resume, err := m.pauseWatcher(ctx, s, &err)
	if err != nil {
		return nil, err
	}
	defer resume()
	major, err := m.PostgresMajor(ctx)
	if err != nil {
		return nil, err
	}
	st, err := m.Observe(ctx, s)
	if err != nil {
		return nil, err
	}
	var primary Member
	var primaries int
	var streaming, runningStandbys []string
	st = slices.DeleteFunc(st, func(x Status) bool { _, ok := s.member(x.Name); return !ok }) // former members: Reconcile removes them
	for _, x := range st {
		switch {
		case x.State == StateRunning && x.Role == topology.RolePrimary:
			primary = x.Member
			primaries++
		case x.State == StateRunning:
			runningStandbys = append(runningStandbys, x.Name)
			if x.Streaming {
				streaming = append(streaming, x.Name)
			}
		}
	}
	if primaries != 1 {
		return nil, fmt.Errorf("applying settings to cluster %s: %d members run as primaries, want 1: reconcile the cluster first", s.Name, primaries)
	}
	value, err := m.effective(s, major, primary, streaming)
	if err != nil {
		return nil, err
	}

	changed := map[string]string{}
	type write struct {
		n      localnode.Node
		params map[string]string
	}
	var writes []write
	for _, x := range st {
		if x.State != StateRunning && x.State != StateStopped {
			continue
		}
		if _, err := os.Stat(filepath.Join(x.DataDir, "PG_VERSION")); err != nil {
			continue
		}
		role := localnode.RoleStandby
		var ssn *string
		if x.Name == primary.Name {
			role, ssn = localnode.RolePrimary, &value
		}
		r, err := m.render(s, major, x.Member, role, primary, ssn)
		if err != nil {
			return nil, err
		}
		n := Node(x.Member, role)
		cur, err := m.engine.Parameters(n)
		if err != nil {
			return nil, err
		}
		for _, k := range slices.Sorted(maps.Keys(r.Parameters)) {
			if old, ok := cur[k]; !ok || old != r.Parameters[k] {
				changed[k] = r.Parameters[k]
			}
		}
		for k := range cur {
			if _, ok := r.Parameters[k]; !ok {
				changed[k] = ""
			}
		}
		writes = append(writes, write{n, r.Parameters})
	}
	if len(changed) == 0 {
		if err := m.clearOverride(ctx, primary); err != nil {
			return nil, err
		}
		return nil, writeManifest(s)
	}
	// pg_settings holds names in lower case; RestartRequired compares them so.
	names := make([]string, 0, len(changed))
	for k := range changed {
		names = append(names, strings.ToLower(k))
	}
	contexts, err := m.settingContexts(ctx, primary, names)
	if err != nil {
		return nil, err
	}
	restart, reload := bootstrap.RestartRequired(changed, contexts)
	tflog.Info(ctx, fmt.Sprintf("cluster %s: applying settings", s.Name), map[string]any{"reload": reload, "restart": restart})
	for _, w := range writes {
		if err := m.engine.SetParameters(w.n, w.params); err != nil {
			return nil, err
		}
	}
	for _, x := range st {
		if x.State == StateRunning {
			if err := m.engine.Reload(ctx, Node(x.Member, localnode.RoleStandby)); err != nil {
				return nil, err
			}
		}
	}
	// After pgnvme.conf has the new value: no reload in between runs with the old one.
	if err := m.clearOverride(ctx, primary); err != nil {
		return nil, err
	}
	if err := writeManifest(s); err != nil {
		return nil, err
	}
	if len(restart) == 0 {
		return nil, m.waitStreaming(ctx, primary, streaming, &value)
	}
	// Standbys first, in priority order, each back before the next.
	for _, mb := range s.Members {
		if mb.Name == primary.Name || !slices.Contains(runningStandbys, mb.Name) {
			continue
		}
		tflog.Info(ctx, fmt.Sprintf("cluster %s: restarting standby %s for %v", s.Name, mb.Name, restart))
		if err := m.restart(ctx, s, mb); err != nil {
			return restarted, err
		}
		restarted = append(restarted, mb.Name)
		want := &value
		if !slices.Contains(streaming, mb.Name) {
			want = nil // it was not streaming before: it need not be in the quorum now
		}
		if err := m.waitStreaming(ctx, primary, []string{mb.Name}, want); err != nil {
			return restarted, err
		}
		if m.afterRestart != nil {
			m.afterRestart(ctx, mb.Name)
		}
	}
	tflog.Info(ctx, fmt.Sprintf("cluster %s: restarting primary %s for %v", s.Name, primary.Name, restart))
	if err := m.restart(ctx, s, primary); err != nil {
		return restarted, err
	}
	restarted = append(restarted, primary.Name)
	if err := m.waitStreaming(ctx, primary, streaming, &value); err != nil {
		return restarted, err
	}
	if m.afterRestart != nil {
		m.afterRestart(ctx, primary.Name)
	}
	return restarted, nil
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
