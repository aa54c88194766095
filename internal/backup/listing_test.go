package backup_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/backup"
)

// TestListingReadAlike: `pgbackrest info --output=json` is read in two languages for different rules,
// DecideScript's (what is due, which kind, what retention keeps) on the nodes and the provider's
// (archive.ParsePgBackRestInfo: a backup overdue, the backup a restore starts from). Neither re-decides
// the other's rules, and both read the same listing alike: on pgBackRest 2.55.1's own listing of a full,
// an incremental and a differential backup, DecideScript names the provider's newest backup with its start,
// counts the backups since the provider's newest full one, and keeps as many full backups as the provider
// counts.
func TestListingReadAlike(t *testing.T) {
	listing, err := os.ReadFile(filepath.Join("testdata", "pgbackrest_info.json"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := archive.ParsePgBackRestInfo(listing)
	if err != nil || len(info.Backups) != 3 {
		t.Fatalf("ParsePgBackRestInfo = %+v, %v; want the fixture's three backups", info.Backups, err)
	}
	newest, fulls, lastFull := info.Backups[len(info.Backups)-1], 0, -1
	for i, b := range info.Backups {
		if b.Type == "full" {
			fulls, lastFull = fulls+1, i
		}
	}
	script := filepath.Join(t.TempDir(), "decide.py")
	if err := os.WriteFile(script, backup.DecideScript, 0o755); err != nil {
		t.Fatal(err)
	}
	decide := func(now time.Time, args ...string) string {
		cmd := exec.Command("/usr/bin/python3", append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), fmt.Sprintf("PGNVME_NOW=%d", now.Unix()))
		cmd.Stdin = strings.NewReader(string(listing))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("decide.py %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	start := time.Unix(newest.Start, 0).UTC()
	if got, want := decide(start.Add(time.Minute), "next", "pgbackrest", "yearly", "7"), "none the newest backup "+newest.Label+" started "+start.Format(time.RFC3339)+";"; !strings.HasPrefix(got, want) {
		t.Errorf("next = %q; want it to start %q (the provider's newest backup)", got, want)
	}
	if got, want := decide(start.AddDate(0, 0, 2), "next", "pgbackrest", "daily", "7"),
		fmt.Sprintf("incr %d backups since the full backup %s", len(info.Backups)-lastFull, info.Backups[lastFull].Label); !strings.HasPrefix(got, want) {
		t.Errorf("next = %q; want it to start %q (the provider's reading)", got, want)
	}
	if got, want := decide(start.Add(time.Hour), "keep", "pgbackrest", "30", "1"), fmt.Sprint(fulls); got != want {
		t.Errorf("keep = %s; the provider counts %s full backups in the window", got, want)
	}
}
