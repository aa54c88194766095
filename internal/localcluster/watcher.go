package localcluster

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// The durability watcher keeps data_durability "preferred" writable between
// applies: a detached POSIX shell script (watcher.sh), one per cluster, run
// as the server user in its own session, that outlives the provider process.
// Every second it finds the primary, counts the named standbys streaming from
// it and, when the primary's synchronous_standby_names is not the value
// bootstrap.EffectiveSynchronousStandbyNames gives for that count, sets it
// with ALTER SYSTEM and reloads. Every value and every query is rendered here
// in Go (for each member as a possible primary and each count of streaming
// standbys) and passed as arguments: the script does no quoting.
//
// Its files, next to the manifest in the data directory root:
//
//	ROOT/pgnvme-durability.sh    the script
//	ROOT/pgnvme-durability.pid   its PID (written by the provider)
//	ROOT/pgnvme-durability.log   its output, appended across restarts
//
// It exits by itself when no member answers for watcherGiveUp in a row or
// when the PID file no longer names it.
//
// ALTER SYSTEM writes postgresql.auto.conf, which overrides pgnvme.conf
// (where every other setting, and the provider's synchronous_standby_names,
// lives). So the provider owns the setting while it works and the watcher
// owns it in between: Reconcile, ApplySettings and EnforceDurability stop the
// watcher first, remove the override from the primary (ALTER SYSTEM RESET,
// see clearOverride) before writing pgnvme.conf, and start the watcher again
// when they return (also after an error); Create starts it at its end;
// Destroy stops it and removes its files.

//go:embed watcher.sh
var watcherScript []byte

// watcherGiveUp is how long the watcher runs on with no member answering.
const watcherGiveUp = 60 * time.Second

// WatcherWanted reports whether s gets a durability watcher: data durability
// "preferred", a synchronous number above 0 and at least one standby.
func WatcherWanted(s Spec) bool {
	return s.Synchronous.DataDurability == bootstrap.DurabilityPreferred && s.Synchronous.Number > 0 && len(s.Members) > 1
}

// durabilityWatcher is the durability watcher as a detached script.
var durabilityWatcher = detached{
	what: "durability watcher", base: "pgnvme-durability", script: watcherScript,
	wanted: WatcherWanted, args: (*Manager).watcherArgs,
}

// WatcherRunning reports whether s's durability watcher runs with the
// arguments s asks for now. False means, when WatcherWanted(s), that the
// next Reconcile, ApplySettings or EnforceDurability must (re)start it: it
// died, gave up, or watches an older spec. A watcher that runs while s does
// not want one also reports true (as drift the other way).
func (m *Manager) WatcherRunning(s Spec) (bool, error) {
	return m.detachedRunning(durabilityWatcher, s)
}

// watcherArgs are the script's arguments for s (see watcher.sh): the PID
// file, psql, host, superuser, give-up seconds and stride, then for each
// member NAME PORT PROBE and the SQL literal of the effective
// synchronous_standby_names when 0, 1, ... len(standbys) named standbys
// stream, each computed with bootstrap.EffectiveSynchronousStandbyNames for
// that member as the primary.
func (m *Manager) watcherArgs(ctx context.Context, s Spec, pidPath string) ([]string, error) {
	major, err := m.PostgresMajor(ctx)
	if err != nil {
		return nil, err
	}
	stride := 3 + len(s.Members)
	args := []string{pidPath, filepath.Join(m.engine.BinDir(), "psql"), Host, m.engine.Superuser(),
		strconv.Itoa(int(watcherGiveUp / time.Second)), strconv.Itoa(stride)}
	for _, p := range s.Members {
		var standbys []string
		for _, mb := range s.Members {
			if mb.Name != p.Name {
				standbys = append(standbys, mb.Name)
			}
		}
		values := make([]string, 0, len(standbys)+1)
		for n := 0; n <= len(standbys); n++ {
			v, err := m.effective(s, major, p, standbys[:n])
			if err != nil {
				return nil, err
			}
			values = append(values, v)
		}
		args = append(args, p.Name, strconv.Itoa(p.Port), watcherProbe(standbys, values))
		for _, v := range values {
			args = append(args, sqlLiteral(v))
		}
	}
	return args, nil
}

// watcherProbe is the SQL the watcher runs on each member: "t|..." on a
// standby; on the primary "f|COUNT|MATCHES", COUNT the named standbys
// (ignoring ASCII case, as PostgreSQL matches application_name) streaming
// and MATCHES whether synchronous_standby_names is values[COUNT].
func watcherProbe(standbys, values []string) string {
	names := make([]string, len(standbys))
	for i, n := range standbys {
		names[i] = sqlLiteral(strings.ToLower(n))
	}
	var when strings.Builder
	for i, v := range values {
		fmt.Fprintf(&when, " WHEN %d THEN %s", i, sqlLiteral(v))
	}
	return "SELECT pg_is_in_recovery(), r.n, current_setting('synchronous_standby_names') = CASE r.n" + when.String() + " END" +
		" FROM (SELECT count(DISTINCT lower(application_name)) AS n FROM pg_stat_replication" +
		" WHERE state = 'streaming' AND lower(application_name) IN (" + strings.Join(names, ", ") + ")) r"
}

// sqlLiteral writes v as an SQL string literal that reads the same whatever
// standard_conforming_strings is (as pgclient quotes values).
func sqlLiteral(v string) string {
	q := "'" + strings.ReplaceAll(v, "'", "''") + "'"
	if strings.Contains(v, `\`) {
		q = "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

// clearOverride removes an ALTER SYSTEM value of synchronous_standby_names
// (the watcher's) from running member mb and reloads it, so that pgnvme.conf
// applies again. Nothing when its postgresql.auto.conf has none.
func (m *Manager) clearOverride(ctx context.Context, mb Member) error {
	b, err := os.ReadFile(filepath.Join(mb.DataDir, "postgresql.auto.conf"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	found := false
	for line := range strings.SplitSeq(string(b), "\n") {
		k, _, ok := strings.Cut(line, "=")
		if ok && strings.EqualFold(strings.TrimSpace(k), "synchronous_standby_names") {
			found = true
		}
	}
	if !found {
		return nil
	}
	conn, err := m.connect(ctx, mb)
	if err != nil {
		return fmt.Errorf("removing the durability watcher's synchronous_standby_names from %s: %w", mb.Name, err)
	}
	defer func() { _ = conn.Close(context.WithoutCancel(ctx)) }()
	if err := conn.AlterSystemReset(ctx, "synchronous_standby_names"); err != nil {
		return fmt.Errorf("removing the durability watcher's synchronous_standby_names from %s: %w", mb.Name, err)
	}
	return conn.ReloadConf(ctx)
}
