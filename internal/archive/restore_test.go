package archive

import (
	"strings"
	"testing"
	"time"
)

func TestRestoreBackup(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	h := Health{
		Backups: []Backup{
			{Label: "full-1", Stop: at("2026-12-01T00:10:00Z").Unix()},
			{Label: "incr-2", Stop: at("2026-12-01T12:10:00Z").Unix()},
			{Label: "full-3", Stop: at("2026-12-02T00:10:00Z").Unix()},
		},
		RecoverableFrom: at("2026-12-01T00:10:00Z"),
		RecoverableTo:   at("2026-12-02T09:00:00Z"),
	}
	for _, tc := range []struct {
		target, want, err string
	}{
		{"", "full-3", ""},
		{"2026-12-01T00:10:00Z", "full-1", ""},
		{"2026-12-01T12:09:59Z", "full-1", ""},
		{"2026-12-01T12:10:00Z", "incr-2", ""},
		{"2026-12-02T08:59:00Z", "full-3", ""},
		{"2026-12-01T00:09:59Z", "", "before the oldest base backup finished: the archive can be restored to any moment from 2026-12-01T00:10:00Z"},
		{"2026-12-02T09:00:01Z", "", "after the newest WAL segment reached the archive"},
	} {
		var target time.Time
		if tc.target != "" {
			target = at(tc.target)
		}
		b, err := RestoreBackup(h, target)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("target %q: %v, %v; want an error containing %q", tc.target, b, err, tc.err)
		case tc.err == "" && (err != nil || b.Label != tc.want):
			t.Errorf("target %q: %v, %v; want %s", tc.target, b.Label, err, tc.want)
		}
	}
	if _, err := RestoreBackup(Health{}, time.Time{}); err == nil || !strings.Contains(err.Error(), "no base backup") {
		t.Errorf("an archive without a backup: %v", err)
	}
}
