package awsclient_test

import (
	"bytes"
	"context"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/archive"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
)

// ReadArchiveHistory, ListArchiveWAL and ReadArchiveBackups on moto: an empty prefix and a missing bucket
// hold nothing; pgBackRest's real info files (see internal/archive/testdata/history) and a WAL-G prefix name
// the history and its identity, their newest segments and their backups; an encrypted info file is history
// of unknown identity.
func TestReadArchiveHistory_moto(t *testing.T) {
	t.Parallel()
	url := startArchiveMoto(t)
	ctx := context.Background()
	api := motoS3(url, "eu-west-1", "")
	mustCreate(t, api, "tf-acc-history", "eu-west-1", nil)
	put := func(key string, body []byte) {
		t.Helper()
		if _, err := api.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("tf-acc-history"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	fixture := func(name string) []byte {
		b, err := os.ReadFile("../archive/testdata/history/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	const id = "7714574582340554800"
	pgbr := func(prefix string) archive.Location {
		l, _ := archive.LocationOf(map[string]string{"repo1-type": "s3", "repo1-s3-bucket": "tf-acc-history", "repo1-path": "/" + prefix + "/pgbackrest"}, nil, "demo")
		return l
	}
	walg := func(bucket, prefix string) archive.Location {
		l, _ := archive.LocationOf(nil, map[string]string{"WALG_S3_PREFIX": "s3://" + bucket + "/" + prefix}, "")
		return l
	}

	put("clusters/a/pgbackrest/archive/demo/archive.info", fixture("archive.info"))
	put("clusters/a/pgbackrest/archive/demo/15-1/0000000100000000/000000010000000000000001-abc.gz", []byte("wal"))
	put("clusters/a/pgbackrest/backup/demo/backup.info", fixture("backup.info"))
	put("clusters/b/pgbackrest/archive/demo/archive.info", []byte("\x8f\x01 encrypted"))
	put("clusters/c/wal_005/000000010000000000000001.lz4", []byte("wal"))
	put("clusters/d/basebackups_005/base_000000010000000000000002_backup_stop_sentinel.json",
		[]byte(`{"LSN":33554472,"PgVersion":150004,"SystemIdentifier":`+id+`}`))
	put("clusters/d/wal_005/000000010000000000000002.lz4", []byte("wal"))

	put("clusters/a/pgbackrest/archive/demo/15-1/0000000100000000/000000010000000000000002-def.gz", []byte("wal"))
	put("clusters/a/pgbackrest/archive/demo/15-1/0000000100000000/000000010000000000000002.00000028.backup", []byte("label"))
	put("clusters/a/pgbackrest/archive/demo/15-1/00000002.history", []byte("1\t0/3000000\tno recovery target specified"))
	put("clusters/d/wal_005/000000010000000000000003.partial.lz4", []byte("partial"))
	put("clusters/d/wal_005/000000010000000000000002.00000028.backup.lz4", []byte("label"))
	put("clusters/d/wal_005/00000002.history.lz4", []byte("history"))
	put("clusters/d/basebackups_005/base_000000010000000000000004_D_000000010000000000000002_backup_stop_sentinel.json",
		[]byte(`{"LSN":67108904,"PgVersion":150004,"SystemIdentifier":`+id+`,"UncompressedSize":23000000,"CompressedSize":3000000}`))

	t.Run("verification records", func(t *testing.T) {
		put("clusters/a/pgbackrest/pgnvme/demo/verification.json", []byte(`{"tool": "pgbackrest", "timeline": 2, "verified_at": "2026-12-02T12:00:00Z", "ok": true, "detail": "2 WAL ranges checked"}`))
		put("clusters/d/pgnvme/verification.json", []byte(`{"tool": "walg", "timeline": 3, "verified_at": "2026-12-02T12:00:00Z", "ok": false, "detail": "integrity FAILURE"}`))
		put("clusters/e/pgnvme/verification.json", []byte(`not json`))
		for _, tc := range []struct {
			loc      archive.Location
			timeline uint32 // 0: no record
			ok       bool
			fails    bool
		}{
			{pgbr("clusters/a"), 2, true, false},
			{walg("tf-acc-history", "clusters/d"), 3, false, false},
			{pgbr("clusters/empty"), 0, false, false},
			{walg("tf-acc-no-such-bucket", "x"), 0, false, false},
			{walg("tf-acc-history", "clusters/e"), 0, false, true},
		} {
			v, err := awsclient.ReadArchiveVerification(ctx, api, tc.loc)
			switch {
			case tc.fails:
				if err == nil {
					t.Errorf("%s: an unreadable record read as %+v", tc.loc, v)
				}
			case err != nil:
				t.Errorf("%s: %v", tc.loc, err)
			case tc.timeline == 0 && v != nil, tc.timeline != 0 && (v == nil || v.Timeline != tc.timeline || v.OK != tc.ok):
				t.Errorf("%s: record %+v, want timeline %d ok %v", tc.loc, v, tc.timeline, tc.ok)
			}
		}
	})

	t.Run("restore attempts", func(t *testing.T) {
		put("clusters/a/pgbackrest/pgnvme/demo/restore-attempts/node-1-1733356790000000000", []byte("started\n"))
		put("clusters/a/pgbackrest/pgnvme/demo/restore-attempts/node-1-1733356790000000000.failed", []byte("pgbackrest restore of x exited 1: ERROR\n"))
		put("clusters/a/pgbackrest/pgnvme/demo/restore-attempts/node-2-1733356800000000000", []byte("started\n"))
		put("clusters/d/pgnvme/restore-attempts/node-3-1733356810000000000", []byte("started\n"))
		got, err := awsclient.ReadRestoreAttempts(ctx, api, pgbr("clusters/a"), map[string]bool{"clusters/a/pgbackrest/pgnvme/demo/restore-attempts/node-2-1733356800000000000": true})
		want := []awsclient.RestoreAttempt{
			{Key: "clusters/a/pgbackrest/pgnvme/demo/restore-attempts/node-1-1733356790000000000", Text: "started\n"},
			{Key: "clusters/a/pgbackrest/pgnvme/demo/restore-attempts/node-1-1733356790000000000.failed", Text: "pgbackrest restore of x exited 1: ERROR\n"},
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("pgBackRest: %+v, %v; want %+v (the known one left out)", got, err, want)
		}
		if got, err := awsclient.ReadRestoreAttempts(ctx, api, walg("tf-acc-history", "clusters/d"), nil); err != nil || len(got) != 1 || got[0].Key != "clusters/d/pgnvme/restore-attempts/node-3-1733356810000000000" {
			t.Errorf("WAL-G: %+v, %v", got, err)
		}
		if got, err := awsclient.ReadRestoreAttempts(ctx, api, walg("tf-acc-no-such-bucket", "x"), nil); err != nil || len(got) != 0 {
			t.Errorf("a missing bucket: %+v, %v; want none", got, err)
		}
	})

	t.Run("newest segments and backups", func(t *testing.T) {
		for _, tc := range []struct {
			loc     archive.Location
			segment string
			backups []string
		}{
			{pgbr("clusters/a"), "000000010000000000000002", []string{"20261202-052928F full"}},
			{walg("tf-acc-history", "clusters/d"), "000000010000000000000002", []string{"base_000000010000000000000002 full",
				"base_000000010000000000000004_D_000000010000000000000002 delta"}},
			{pgbr("clusters/empty"), "", nil},
			{walg("tf-acc-no-such-bucket", "x"), "", nil},
		} {
			wal, err := awsclient.ListArchiveWAL(ctx, api, tc.loc)
			h := archive.Assess(archive.Reading{Tool: tc.loc.Tool, WAL: wal}, time.Now())
			if err != nil || h.LastArchived != tc.segment || (h.LastArchived != "" && time.Since(h.LastArchivedAt) > time.Hour) {
				t.Errorf("%s: newest segment %q at %s (%v); want %q", tc.loc, h.LastArchived, h.LastArchivedAt, err, tc.segment)
			}
			backups, err := awsclient.ReadArchiveBackups(ctx, api, tc.loc)
			var got []string
			for _, b := range backups {
				got = append(got, b.Label+" "+b.Type)
			}
			if err != nil || !reflect.DeepEqual(got, tc.backups) {
				t.Errorf("%s: backups %q (%v); want %q", tc.loc, got, err, tc.backups)
			}
			if n := len(backups); n > 0 && tc.loc.Tool == archive.ToolWALG && (backups[n-1].Size != 23000000 || backups[n-1].RepoSize != 3000000) {
				t.Errorf("%s: the newest backup's sizes %+v", tc.loc, backups[n-1])
			}
		}
	})

	for _, tc := range []struct {
		name  string
		loc   archive.Location
		found int
		ids   []string
	}{
		{"an empty prefix", pgbr("clusters/empty"), 0, nil},
		{"a bucket that does not exist", walg("tf-acc-no-such-bucket", "x"), 0, nil},
		{"pgBackRest's stanza", pgbr("clusters/a"), 2, []string{id}},
		{"an encrypted stanza", pgbr("clusters/b"), 2, nil},
		{"WAL-G WAL before any backup", walg("tf-acc-history", "clusters/c"), 1, nil},
		{"WAL-G with a backup", walg("tf-acc-history", "clusters/d"), 2, []string{id}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := awsclient.ReadArchiveHistory(ctx, api, tc.loc)
			if err != nil {
				t.Fatal(err)
			}
			if len(h.Found) != tc.found || !reflect.DeepEqual(h.SystemIDs, tc.ids) {
				t.Fatalf("history %+v; want %d found and ids %v", h, tc.found, tc.ids)
			}
			if refused := archive.CheckHistory(h, "") != nil; refused != (tc.found > 0) {
				t.Errorf("a new cluster refused: %v, want %v", refused, tc.found > 0)
			}
		})
	}
}
