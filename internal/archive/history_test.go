package archive_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
)

// The fixtures are pgBackRest 2.45's own files and output for a stanza "fix" after stanza-create and one
// full backup of PostgreSQL 15 (system identifier 7714574582340554800).
const fixtureSystemID = "7714574582340554800"

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/history/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLocationOf(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pgbackrest map[string]string
		walg       map[string]string
		want       archive.Location
		text       string
	}{
		{"pgBackRest on S3", map[string]string{"repo1-type": "s3", "repo1-s3-bucket": "b", "repo1-s3-region": "eu-west-1", "repo1-path": "/clusters/demo/pgbackrest"}, nil,
			archive.Location{Tool: archive.ToolPgBackRest, Bucket: "b", Region: "eu-west-1", Root: "clusters/demo/pgbackrest/", Stanza: "demo",
				Keys: []string{"clusters/demo/pgbackrest/archive/demo/", "clusters/demo/pgbackrest/backup/demo/"}},
			"pgBackRest stanza demo in s3://b/clusters/demo/pgbackrest"},
		{"pgBackRest posix", map[string]string{"repo1-type": "posix", "repo1-path": "/srv/repo"}, nil,
			archive.Location{Tool: archive.ToolPgBackRest, Root: "/srv/repo", Stanza: "demo", Keys: []string{"archive/demo/", "backup/demo/"}},
			"pgBackRest stanza demo in /srv/repo"},
		{"WAL-G", nil, map[string]string{"WALG_S3_PREFIX": "s3://b/clusters/demo", "AWS_REGION": "eu-west-1"},
			archive.Location{Tool: archive.ToolWALG, Bucket: "b", Region: "eu-west-1", Root: "clusters/demo/",
				Keys: []string{"clusters/demo/wal_005/", "clusters/demo/basebackups_005/"}},
			"WAL-G prefix s3://b/clusters/demo"},
		{"WAL-G at the bucket's root", nil, map[string]string{"WALG_S3_PREFIX": "s3://b/"},
			archive.Location{Tool: archive.ToolWALG, Bucket: "b", Keys: []string{"wal_005/", "basebackups_005/"}},
			"WAL-G prefix s3://b/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := archive.LocationOf(tc.pgbackrest, tc.walg, "demo")
			if !ok || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("LocationOf = %#v, %v; want %#v", got, ok, tc.want)
			}
			if got.String() != tc.text {
				t.Errorf("String = %q, want %q", got.String(), tc.text)
			}
		})
	}
	if _, ok := archive.LocationOf(map[string]string{"repo1-type": "gcs"}, nil, "demo"); ok {
		t.Error("a repository type pgnvme cannot read gave a location")
	}
	if _, ok := archive.LocationOf(nil, map[string]string{"WALG_FILE_PREFIX": "/x"}, "demo"); ok {
		t.Error("a WAL-G storage other than S3 gave a location")
	}
}

func TestPgBackRestInfoSystemIDs(t *testing.T) {
	for _, name := range []string{"archive.info", "backup.info"} {
		ids, err := archive.PgBackRestInfoSystemIDs(read(t, name))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ids, []string{fixtureSystemID, fixtureSystemID}) {
			t.Errorf("%s: ids %v", name, ids)
		}
	}
	if _, err := archive.PgBackRestInfoSystemIDs([]byte("\x8f\x01binary cipher text")); err == nil {
		t.Error("an encrypted info file was read")
	}
}

func TestParsePgBackRestInfo(t *testing.T) {
	info, err := archive.ParsePgBackRestInfo(read(t, "pgbackrest-info.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := archive.PgBackRestInfo{StatusMessage: "ok", SystemIDs: []string{fixtureSystemID},
		Archives: []archive.PgBackRestArchive{{ID: "15-1", Min: "000000010000000000000001", Max: "000000010000000000000002"}},
		Backups: []archive.Backup{{Label: "20261202-052928F", Type: "full", Start: 1796189368, Stop: 1796189370, Size: 22992538, RepoSize: 3043457,
			WALStart: "000000010000000000000002", WALStop: "000000010000000000000002", LSNStart: "0/2000028", LSNStop: "0/2000100", Major: 15}}}
	if !reflect.DeepEqual(info, want) {
		t.Fatalf("info = %+v\nwant %+v", info, want)
	}
	l := archive.Location{Tool: archive.ToolPgBackRest, Root: "/srv/repo", Stanza: "fix"}
	h := info.History(l)
	if h.Empty() || !reflect.DeepEqual(h.SystemIDs, []string{fixtureSystemID}) || len(h.Found) != 2 {
		t.Fatalf("history %+v", h)
	}
	missing, err := archive.ParsePgBackRestInfo([]byte(`[{"archive":[],"backup":[],"cipher":"none","db":[],"name":"nostanza",` +
		`"repo":[{"cipher":"none","key":1,"status":{"code":1,"message":"missing stanza path"}}],"status":{"code":1,"lock":{"backup":{"held":false}},"message":"missing stanza path"}}]`))
	if err != nil || missing.StatusCode != 1 || !missing.History(l).Empty() {
		t.Fatalf("a missing stanza: %+v, %v", missing, err)
	}
}

func TestCheckHistory(t *testing.T) {
	l := archive.Location{Tool: archive.ToolWALG, Bucket: "b", Root: "clusters/demo/"}
	empty := archive.History{Location: l}
	unknown := archive.History{Location: l, Found: []string{"clusters/demo/wal_005/000000010000000000000001.lz4"}}
	known := archive.History{Location: l, Found: []string{"a backup"}, SystemIDs: []string{"7"}}
	for _, tc := range []struct {
		name    string
		h       archive.History
		own     string
		refused bool
	}{
		{"empty, new cluster", empty, "", false},
		{"empty, running cluster", empty, "7", false},
		{"any history, new cluster", known, "", true},
		{"history of unknown identity, new cluster", unknown, "", true},
		{"history of unknown identity, running cluster", unknown, "7", true},
		{"its own history", known, "7", false},
		{"another's history", known, "8", true},
		{"its own and another's", archive.History{Location: l, SystemIDs: []string{"7", "8"}}, "7", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := archive.CheckHistory(tc.h, tc.own)
			var fe *archive.ForeignHistoryError
			if tc.refused != errors.As(err, &fe) {
				t.Fatalf("CheckHistory = %v, refused want %v", err, tc.refused)
			}
			if tc.refused && (!strings.Contains(err.Error(), "s3://b/clusters/demo") || !strings.Contains(err.Error(), "archive location of its own")) {
				t.Errorf("the refusal does not name the location and what to do: %v", err)
			}
		})
	}
}

func TestWALGSentinelSystemID(t *testing.T) {
	id, err := archive.WALGSentinelSystemID([]byte(`{"LSN":33554472,"PgVersion":150004,"FinishLSN":33554688,"SystemIdentifier":7714574582340554800,"UncompressedSize":1}`))
	if err != nil || id != fixtureSystemID {
		t.Fatalf("id %q, %v", id, err)
	}
	if id, err := archive.WALGSentinelSystemID([]byte(`{"LSN":1}`)); err != nil || id != "" {
		t.Fatalf("no identifier: %q, %v", id, err)
	}
}
