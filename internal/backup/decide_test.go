package backup

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// decide runs DecideScript with args and stdin at the moment now, and returns what it printed.
func decide(t *testing.T, now time.Time, stdin string, args ...string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "decide.py")
	if err := os.WriteFile(script, DecideScript, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/usr/bin/python3", append([]string{script}, args...)...)
	cmd.Env = append(os.Environ(), "PGNVME_NOW="+strconv.FormatInt(now.Unix(), 10))
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("decide.py %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// made is one backup of a listing: when it started and whether it is full.
type made struct {
	start time.Time
	full  bool
}

// pgBackRestInfo is `pgbackrest --output=json info` for backups bs (the fields DecideScript reads).
func pgBackRestInfo(bs []made) string {
	var list []map[string]any
	for i, b := range bs {
		typ, suffix := "incr", "I"
		if b.full {
			typ, suffix = "full", "F"
		}
		list = append(list, map[string]any{
			"label":     fmt.Sprintf("%s_%02d%s", b.start.Format("20060102-150405"), i, suffix),
			"type":      typ,
			"timestamp": map[string]any{"start": b.start.Unix(), "stop": b.start.Add(time.Minute).Unix()},
		})
	}
	out, _ := json.Marshal([]map[string]any{{"name": "demo", "backup": list}})
	return string(out)
}

// walgList is `wal-g backup-list --detail --json` for backups bs: a delta's name holds _D_.
func walgList(bs []made) string {
	var list []map[string]any
	for i, b := range bs {
		name := fmt.Sprintf("base_0000000100000000000000%02X", i+2)
		if !b.full {
			name += "_D_000000010000000000000002"
		}
		list = append(list, map[string]any{
			"backup_name": name,
			"time":        b.start.Add(time.Minute).Format(time.RFC3339Nano),
			"start_time":  b.start.Format("2006-01-02T15:04:05.000000000Z"),
			"finish_time": b.start.Add(time.Minute).Format(time.RFC3339Nano),
		})
	}
	out, _ := json.Marshal(list)
	return string(out)
}

var base = time.Date(2026, 12, 1, 10, 7, 13, 0, time.UTC)

// TestDecideNext: a backup is due when the schedule elapsed since the newest one started, full when the
// chain since the newest full is full_every long; both listings give the same answers.
func TestDecideNext(t *testing.T) {
	hours := func(h int) time.Time { return base.Add(time.Duration(h) * time.Hour) }
	cases := []struct {
		name      string
		bs        []made
		now       time.Time
		schedule  string
		fullEvery int
		want      string
	}{
		{"empty archive", nil, base, "daily", 7, "full"},
		{"not yet", []made{{base, true}}, hours(13), "daily", 7, "none"},
		{"daily elapsed", []made{{base, true}}, hours(14), "daily", 7, "incr"},
		{"every five minutes", []made{{base, true}}, base.Add(3 * time.Minute), "*:0/5", 7, "incr"},
		{"every five minutes, not yet", []made{{base, true}}, base.Add(2 * time.Minute), "*:0/5", 7, "none"},
		{"chain complete", []made{{hours(-3), true}, {hours(-2), false}, {hours(-1), false}}, hours(1), "hourly", 3, "full"},
		{"chain open", []made{{hours(-3), true}, {hours(-2), false}, {hours(-1), false}}, hours(1), "hourly", 4, "incr"},
		{"every backup full", []made{{hours(-1), true}}, hours(1), "hourly", 1, "full"},
		{"no full backup", []made{{hours(-1), false}}, hours(1), "hourly", 7, "full"},
	}
	for _, c := range cases {
		for tool, listing := range map[string]string{"pgbackrest": pgBackRestInfo(c.bs), "walg": walgList(c.bs)} {
			t.Run(c.name+"/"+tool, func(t *testing.T) {
				got := decide(t, c.now, listing, "next", tool, c.schedule, strconv.Itoa(c.fullEvery))
				if action, _, _ := strings.Cut(got, " "); action != c.want {
					t.Fatalf("next = %q, want %s", got, c.want)
				}
			})
		}
	}
}

// TestDecideKeep: retention keeps the full backups inside the window and the newest one before it, never
// fewer than min_full_backups.
func TestDecideKeep(t *testing.T) {
	days := func(d int) time.Time { return base.AddDate(0, 0, d) }
	weekly := []made{{days(-21), true}, {days(-20), false}, {days(-14), true}, {days(-13), false}, {days(-7), true}, {days(-1), false}}
	cases := []struct {
		name      string
		bs        []made
		window    int
		minFull   int
		wantKeep  int
		wantShort string
	}{
		// Fulls at -21, -14, -7: a 10-day window starts at -10, inside the chain of -14.
		{"window reaches into an older chain", weekly, 10, 1, 2, ""},
		{"window covers every chain", weekly, 30, 1, 3, ""},
		{"window inside the newest chain", weekly, 3, 1, 1, ""},
		{"count alone", weekly, 0, 2, 2, ""},
		{"min above the window", weekly, 3, 3, 3, ""},
		{"empty", nil, 7, 2, 2, ""},
	}
	for _, c := range cases {
		for tool, listing := range map[string]string{"pgbackrest": pgBackRestInfo(c.bs), "walg": walgList(c.bs)} {
			t.Run(c.name+"/"+tool, func(t *testing.T) {
				got := decide(t, base, listing, "keep", tool, strconv.Itoa(c.window), strconv.Itoa(c.minFull))
				if got != strconv.Itoa(c.wantKeep) {
					t.Fatalf("keep = %s, want %d", got, c.wantKeep)
				}
			})
		}
	}
}

// TestDecidePolicy: the policy comes from Patroni's dynamic configuration, the defaults when it holds none.
func TestDecidePolicy(t *testing.T) {
	def := Default().Args()
	in := append([]string{"policy"}, def...)
	if got := decide(t, base, `{"ttl": 30}`, in...); got != strings.Join(def, "\t") {
		t.Fatalf("no policy: %q, want the defaults %q", got, strings.Join(def, "\t"))
	}
	p := Policy{Schedule: "*-*-* 03:00:00", FullEvery: 3, RecoveryWindowDays: 0, MinFullBackups: 4}
	cfg, _ := json.Marshal(map[string]any{"ttl": 30, "postgresql": map[string]any{"use_slots": true, DynamicConfigKey: p.DynamicConfig()}})
	if got, want := decide(t, base, string(cfg), in...), strings.Join(p.Args(), "\t"); got != want {
		t.Fatalf("policy: %q, want %q", got, want)
	}
}
