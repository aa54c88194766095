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
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// pendingRestart reads which settings the running member mb waits to apply with a restart, and which of
// them its configuration lowers that a hot standby must not have below its primary's.
func (m *Manager) pendingRestart(ctx context.Context, mb Member) (pending, lowers []string, err error) {
	conn, err := m.connect(ctx, mb)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the settings %s waits to restart for: %w", mb.Name, err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	running, err := conn.PendingRestart(ctx)
	if err != nil || len(running) == 0 {
		return nil, nil, err
	}
	next, err := m.engine.Parameters(Node(mb, localnode.RoleStandby))
	if err != nil {
		return nil, nil, err
	}
	return slices.Sorted(maps.Keys(running)), bootstrap.StandbyLimitsLowered(running, next), nil
}

// settingsChange is what making the members' settings s's changes, decided on the one running primary.
type settingsChange struct {
	primary Member
	// streaming are the standbys that stream now; value is the primary's synchronous_standby_names for them.
	streaming []string
	value     string
	// writes are the settings of each member with data, as they become.
	writes []settingsWrite
	// changed maps each setting that changes on some member to its new value ("" when removed).
	changed map[string]string
	// restart are the changed settings only a restart applies (bootstrap.RestartRequired), lowers those of
	// them lowered that a hot standby must not have below its primary's.
	restart, lowers []string
}

type settingsWrite struct {
	n      localnode.Node
	params map[string]string
}

// describe is the change as the plan and the log say it: "name = value" (or "name removed"), by name.
func (ch *settingsChange) describe() []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(ch.changed)) {
		if v := ch.changed[k]; v == "" {
			out = append(out, k+" removed")
		} else {
			out = append(out, fmt.Sprintf("%s = %s", k, v))
		}
	}
	return out
}

// ssnName is synchronous_standby_names, which is not a change of the configuration's settings here: every
// Reconcile ends by setting it for the primary and the standbys that stream then (settle), as the
// durability watcher does between applies.
const ssnName = "synchronous_standby_names"

// settingsChangeOf renders every member with data (st: s observed) for its role, compares it with the
// settings on its disk (synchronous_standby_names aside), and asks the primary which of the changed ones
// need a restart. nil when no single primary the configuration names runs (the repairs come first) or
// nothing changes.
func (m *Manager) settingsChangeOf(ctx context.Context, s Spec, major int, st []Status) (*settingsChange, error) {
	primary, ok := runningPrimary(st)
	if _, wanted := s.member(primary.Name); !ok || !wanted {
		return nil, nil // the repairs come first, or the planner refuses to remove the primary
	}
	ch := &settingsChange{primary: primary, changed: map[string]string{}}
	for _, x := range st {
		if _, wanted := s.member(x.Name); wanted && x.Name != primary.Name && x.State == StateRunning && x.Streaming {
			ch.streaming = append(ch.streaming, x.Name)
		}
	}
	var err error
	if ch.value, err = m.effective(s, major, primary, ch.streaming); err != nil {
		return nil, err
	}
	for _, x := range st {
		if _, wanted := s.member(x.Name); !wanted || (x.State != StateRunning && x.State != StateStopped) {
			continue
		}
		if _, err := os.Stat(filepath.Join(x.DataDir, "PG_VERSION")); err != nil {
			continue
		}
		role, ssn := localnode.RoleStandby, (*string)(nil)
		if x.Name == primary.Name {
			role, ssn = localnode.RolePrimary, &ch.value
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
		for k, v := range r.Parameters {
			if old, ok := cur[k]; (!ok || old != v) && k != ssnName {
				ch.changed[k] = v
			}
		}
		for k := range cur {
			if _, ok := r.Parameters[k]; !ok && k != ssnName {
				ch.changed[k] = ""
			}
		}
		ch.writes = append(ch.writes, settingsWrite{n, r.Parameters})
	}
	if len(ch.changed) == 0 {
		return nil, nil
	}
	// pg_settings holds names in lower case; RestartRequired compares them so.
	names := make([]string, 0, len(ch.changed))
	for k := range ch.changed {
		names = append(names, strings.ToLower(k))
	}
	conn, err := m.connect(ctx, primary)
	if err != nil {
		return nil, fmt.Errorf("reading the settings of %s: %w", primary.Name, err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	contexts, err := conn.SettingContexts(ctx, names)
	if err != nil {
		return nil, err
	}
	ch.restart, _ = bootstrap.RestartRequired(ch.changed, contexts)
	running := map[string]string{}
	for _, k := range ch.restart {
		if v, err := conn.Setting(ctx, strings.ToLower(k)); err == nil {
			running[k] = v
		}
	}
	ch.lowers = bootstrap.StandbyLimitsLowered(running, ch.changed)
	return ch, nil
}

// configure writes ch's settings to every member with data and reloads the running ones (the engine's
// StepConfigure); a member whose PostgreSQL then waits for a restart is restarted by the steps after. The
// durability watcher's ALTER SYSTEM value is removed from the primary once pgnvme.conf has the new value,
// and the manifest is rewritten with s. Without restarts it waits until the primary applies its
// synchronous_standby_names.
func (m *Manager) configure(ctx context.Context, s Spec, ch *settingsChange, st []Status) error {
	tflog.Info(ctx, fmt.Sprintf("cluster %s: applying settings", s.Name), map[string]any{"changed": ch.describe(), "restart": ch.restart})
	for _, w := range ch.writes {
		if err := m.engine.SetParameters(w.n, w.params); err != nil {
			return err
		}
	}
	for _, x := range st {
		if _, wanted := s.member(x.Name); wanted && x.State == StateRunning {
			if err := m.engine.Reload(ctx, Node(x.Member, localnode.RoleStandby)); err != nil {
				return err
			}
		}
	}
	// After pgnvme.conf has the new value: no reload in between runs with the old one.
	if err := m.clearOverride(ctx, ch.primary); err != nil {
		return err
	}
	if err := writeManifest(s); err != nil {
		return err
	}
	if len(ch.restart) > 0 {
		return nil
	}
	return m.waitStreaming(ctx, ch.primary, ch.streaming, &ch.value)
}

// restartMember restarts mb for the settings it waits to apply (the engine's StepRestart). A standby first
// replays all the primary has written (a primary restarted before it for a lowered limit has written its
// new value, which the standby must have replayed before it starts with that value), and streams again
// after; the primary waits until it takes writes and every standby that streamed streams again.
func (m *Manager) restartMember(ctx context.Context, s Spec, mb Member, c topology.Cluster) error {
	leader := ""
	var standbys []string
	for _, x := range c.Members {
		switch {
		case x.Role == topology.RolePrimary && x.Running:
			leader = x.Name
		case x.Wanted && x.Running && x.Streaming && x.Name != mb.Name:
			standbys = append(standbys, x.Name)
		}
	}
	primary, ok := s.member(leader)
	if !ok {
		return fmt.Errorf("restarting %s: no member of %s runs as the primary", mb.Name, s.Name)
	}
	// Back in the quorum (not async) when synchronous_standby_names names them: the value the primary has.
	quorum := func() *string {
		if _, ssn, err := m.replication(ctx, primary); err == nil {
			return &ssn
		}
		return nil
	}
	if mb.Name == primary.Name {
		tflog.Info(ctx, fmt.Sprintf("cluster %s: restarting primary %s", s.Name, mb.Name))
		if err := m.restart(ctx, s, mb); err != nil {
			return err
		}
		if err := m.waitPrimary(ctx, mb); err != nil {
			return err
		}
		return m.waitStreaming(ctx, mb, standbys, quorum())
	}
	if err := m.waitCaughtUp(ctx, primary, mb); err != nil {
		return err
	}
	var want *string
	if slices.ContainsFunc(c.Members, func(x topology.Member) bool { return x.Name == mb.Name && x.Streaming }) {
		want = quorum() // it streamed before: it is back in the quorum after
	}
	tflog.Info(ctx, fmt.Sprintf("cluster %s: restarting standby %s", s.Name, mb.Name))
	if err := m.restart(ctx, s, mb); err != nil {
		return err
	}
	return m.waitStreaming(ctx, primary, []string{mb.Name}, want)
}

// waitCaughtUp waits until standby mb has replayed the WAL primary had written when it was asked.
func (m *Manager) waitCaughtUp(ctx context.Context, primary, mb Member) error {
	conn, err := m.connect(ctx, primary)
	if err != nil {
		return err
	}
	target, err := conn.CurrentWALLSN(ctx)
	_ = conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	return wait.Until(ctx, fmt.Sprintf("standby %s to replay primary %s's WAL up to %s", mb.Name, primary.Name, target), m.streamTimeout, pollInterval, m.waitClock(),
		func(ctx context.Context) (bool, error) {
			p, err := m.position(ctx, mb)
			if err != nil {
				return false, wait.NotYet(err)
			}
			c, err := topology.CompareLSN(p.ReplayLSN, target)
			if err != nil {
				return false, wait.NotYet(err)
			}
			return c >= 0, nil
		})
}

// atPrimaryLimits is params, the settings of the standby mb made from the running primary source, with
// each setting a hot standby must not have below its primary's at least the value source runs with
// (bootstrap.StandbyLimitsRaised): while a change lowers one, the primary runs the higher value until its
// restart, and a standby started below it would refuse to start. The settings change after (configure)
// writes the lower value, and the standby restarts for it after the primary.
func (m *Manager) atPrimaryLimits(ctx context.Context, s Spec, mb, source Member, params map[string]string) (map[string]string, error) {
	conn, err := m.connect(ctx, source)
	if err != nil {
		return nil, fmt.Errorf("reading the settings of %s to start %s with: %w", source.Name, mb.Name, err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	running := map[string]string{}
	for _, name := range bootstrap.StandbyLimits() {
		v, err := conn.Setting(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("reading %s on %s: %w", name, source.Name, err)
		}
		running[name] = v
	}
	out, raised := bootstrap.StandbyLimitsRaised(params, running)
	if len(raised) > 0 {
		tflog.Info(ctx, "cluster "+s.Name+": "+mb.Name+" starts with its primary's "+strings.Join(raised, ", ")+
			" (the configuration lowers them; it restarts for them after the primary)", map[string]any{"primary": source.Name})
	}
	return out, nil
}
