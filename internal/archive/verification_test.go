package archive_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

func TestParseVerification(t *testing.T) {
	v, err := archive.ParseVerification([]byte(`{"tool": "pgbackrest", "timeline": 3, "verified_at": "2026-12-02T14:23:27Z", "ok": false, "detail": "checksum invalid: 1"}`))
	if err != nil || v.Timeline != 3 || v.OK || v.Detail != "checksum invalid: 1" || !v.VerifiedAt.Equal(time.Date(2026, 12, 2, 14, 23, 27, 0, time.UTC)) {
		t.Fatalf("ParseVerification = %+v, %v", v, err)
	}
	for _, bad := range []string{``, `{}`, `{"timeline": 2}`, `[1]`} {
		if _, err := archive.ParseVerification([]byte(bad)); err == nil {
			t.Errorf("ParseVerification(%q) accepted", bad)
		}
	}
}

func TestVerificationPath(t *testing.T) {
	pg, _ := archive.LocationOf(map[string]string{"repo1-type": "s3", "repo1-s3-bucket": "b", "repo1-path": "/clusters/demo"}, nil, "demo")
	walg, _ := archive.LocationOf(nil, map[string]string{"WALG_S3_PREFIX": "s3://b/clusters/demo"}, "")
	posix, _ := archive.LocationOf(map[string]string{"repo1-path": "/srv/repo"}, nil, "demo")
	for _, tc := range []struct {
		l         archive.Location
		path, key string
	}{
		{pg, "pgnvme/demo/verification.json", "clusters/demo/pgnvme/demo/verification.json"},
		{walg, "pgnvme/verification.json", "clusters/demo/pgnvme/verification.json"},
		{posix, "pgnvme/demo/verification.json", ""},
	} {
		if p, k := tc.l.VerificationPath(), tc.l.VerificationKey(); p != tc.path || k != tc.key {
			t.Errorf("%s: path %q key %q, want %q %q", tc.l, p, k, tc.path, tc.key)
		}
		for _, prefix := range tc.l.Keys { // never inside the archiver's own directories
			if strings.HasPrefix(tc.l.Root+tc.l.VerificationPath(), prefix) {
				t.Errorf("%s: the record %s lies under %s", tc.l, tc.l.VerificationPath(), prefix)
			}
		}
	}
}

func TestAssess_verification(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	wal := upTo("000000010000000000000009", now.Add(-time.Minute))
	history := func(tl string, ago time.Duration) archive.Object {
		return archive.Object{Key: "archive/demo/15-1/" + tl + ".history", Modified: now.Add(-ago)}
	}
	with := func(extra ...archive.Object) []archive.Object { return append(slices.Clone(wal), extra...) }
	walgHistory := archive.Object{Key: "wal_005/00000003.history.lz4", Modified: now.Add(-time.Hour)}
	passed := &archive.Verification{Tool: "pgbackrest", Timeline: 2, VerifiedAt: now.Add(-time.Hour), OK: true, Detail: "2 WAL ranges checked"}
	failed := &archive.Verification{Tool: "pgbackrest", Timeline: 2, VerifiedAt: now.Add(-time.Hour), Detail: "checksum invalid: 1"}
	for _, tc := range []struct {
		name   string
		wal    []archive.Object
		v      *archive.Verification
		tool   string
		warned string // "" for no warning
	}{
		{"timeline 1 needs none", wal, nil, archive.ToolPgBackRest, ""},
		{"a fresh switch is given time", with(history("00000002", 5*time.Minute)), nil, archive.ToolPgBackRest, ""},
		{"an old switch never verified", with(history("00000002", time.Hour)), nil, archive.ToolPgBackRest, "no verification is recorded"},
		{"verified", with(history("00000002", time.Hour)), passed, archive.ToolPgBackRest, ""},
		{"failed", with(history("00000002", time.Hour)), failed, archive.ToolPgBackRest, "checksum invalid: 1"},
		{"a newer switch not verified", with(history("00000002", 2*time.Hour), history("00000003", time.Hour)), passed, archive.ToolPgBackRest, "covers timeline 2"},
		{"WAL-G's compressed history", append(upTo("000000010000000000000009", now), walgHistory), passed, archive.ToolWALG, "covers timeline 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := archive.Assess(archive.Reading{Tool: tc.tool, WAL: tc.wal, Verification: tc.v, ArchiveTimeout: time.Minute}, now)
			var got []string
			for _, w := range h.Warnings {
				if w.Summary == archive.WarnVerify {
					got = append(got, w.Detail)
				}
			}
			if h.Verification != tc.v {
				t.Errorf("Verification = %v, want %v", h.Verification, tc.v)
			}
			switch {
			case tc.warned == "" && len(got) > 0:
				t.Errorf("warned: %v", got)
			case tc.warned != "" && (len(got) != 1 || !strings.Contains(got[0], tc.warned)):
				t.Errorf("warnings %q, want one with %q", got, tc.warned)
			}
		})
	}
}
