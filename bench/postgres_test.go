package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

func TestParseMajors(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		want    []int
	}{
		{in: "18,15", want: []int{18, 15}},
		{in: " 15 , 18 ", want: []int{15, 18}},
		{in: "18", want: []int{18}},
		{in: "18,18", err: "named twice"},
		{in: "18,x", err: "no PostgreSQL major"},
		{in: "9", err: "no PostgreSQL major"},
		{in: ",", err: "no major"},
	} {
		got, err := parseMajors(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseMajors(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("parseMajors(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestCheckServer(t *testing.T) {
	got, err := checkServer(18, "18.6 (Debian 18.6-1)", 180006)
	if err != nil || got != (Server{PostgresMajor: 18, ServerVersion: "18.6 (Debian 18.6-1)"}) {
		t.Errorf("checkServer(18, 18.6) = %+v, %v", got, err)
	}
	if _, err := checkServer(18, "15.18", 150018); err == nil || !strings.Contains(err.Error(), "asked for PostgreSQL 18, the server runs 15.18") {
		t.Errorf("checkServer(18, 15.18) = %v; want it refused", err)
	}
	if got := serverVersions(Server{ServerVersion: "18.6"}, Server{}, Server{ServerVersion: "18.6"}, Server{ServerVersion: "18.7"}); got != "18.6, 18.7" {
		t.Errorf("serverVersions = %q", got)
	}
}

func TestUnofferedValues(t *testing.T) {
	got := unofferedValues(
		map[string]string{"io_method": "io_uring", "wal_compression": "LZ4", "shared_buffers": "128MB"},
		map[string][]string{"io_method": {"sync", "worker"}, "wal_compression": {"pglz", "lz4", "off"}})
	if len(got) != 1 || !strings.Contains(got["io_method"], "does not offer io_method = io_uring (it offers sync, worker)") {
		t.Errorf("unofferedValues = %v; want io_method alone", got)
	}
}

// On every major installed here, a server started from findPostgres' binaries reports that major, and the
// checkpoints it begins are counted (pg_stat_bgwriter up to 16, pg_stat_checkpointer from 17).
func TestPostgresEveryInstalledMajor(t *testing.T) {
	majors := localnode.InstalledMajors()
	if len(majors) == 0 {
		t.Fatal("no PostgreSQL under /usr/lib/postgresql: run scripts/test-deps.sh")
	}
	for _, major := range majors {
		t.Run(fmt.Sprint(major), func(t *testing.T) {
			ctx := context.Background()
			pg, err := findPostgres(ctx, major)
			if err != nil {
				t.Fatal(err)
			}
			e, err := pg.engine()
			if err != nil {
				t.Fatal(err)
			}
			dir, err := os.MkdirTemp("", "pgnvme-bench-test-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			port, err := acctest.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			n := localnode.Node{Name: "bench", Role: localnode.RolePrimary, Host: "127.0.0.1", Port: port, DataDir: filepath.Join(dir, "bench")}
			t.Cleanup(func() { _ = e.Destroy(context.Background(), n) })
			if err := e.InitPrimary(ctx, n, map[string]string{"fsync": "off"}); err != nil {
				t.Fatal(err)
			}
			if err := e.Start(ctx, n); err != nil {
				t.Fatal(err)
			}
			s, err := readServer(ctx, port, major)
			if err != nil || !strings.HasPrefix(s.ServerVersion, fmt.Sprintf("%d.", major)) {
				t.Fatalf("readServer = %+v, %v; want PostgreSQL %d", s, err, major)
			}
			if _, err := readServer(ctx, port, major-1); err == nil {
				t.Errorf("readServer for PostgreSQL %d on a server of %d: no error", major-1, major)
			}
			before, err := checkpointsBegun(ctx, port)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Psql(ctx, n, "postgres", "CHECKPOINT"); err != nil {
				t.Fatal(err)
			}
			after, err := checkpointsBegun(ctx, port)
			if err != nil || after != before+1 {
				t.Errorf("checkpoints begun %v, then after a CHECKPOINT %v (%v); want one more", before, after, err)
			}
			// A peer's value the server does not offer is dropped, with the values it offers.
			peer := &PeerTuning{Parameters: map[string]string{"wal_compression": "brotli", "jit": "off"}, Dropped: map[string]string{}}
			if err := dropUnofferedValues(ctx, port, peer); err != nil {
				t.Fatal(err)
			}
			if _, kept := peer.Parameters["wal_compression"]; kept || !strings.Contains(peer.Dropped["wal_compression"], "pglz") || peer.Parameters["jit"] != "off" {
				t.Errorf("after dropUnofferedValues: kept %v, dropped %v; want wal_compression = brotli dropped, jit kept", peer.Parameters, peer.Dropped)
			}
			t.Logf("PostgreSQL %s from %s", s.ServerVersion, pg.BinDir)
		})
	}
}

// printBeside sets the majors' figures in columns, the same label on one row, "-" where a major lacks it.
func TestPrintBeside(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "beside")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ec2 := func(create float64, version string) *EC2Bench {
		return &EC2Bench{Server: Server{ServerVersion: version}, Create: newStat([]float64{create, create + 1, create + 2})}
	}
	printBeside(f, []*MajorReport{
		{PostgresMajor: 18, EC2: ec2(20, "18.6"), Restore: &RestoreBench{Sizes: []RestoreSize{{Scale: 68, DrillOverHand: newStat([]float64{1.5})}}}},
		{PostgresMajor: 15, EC2: ec2(30, "15.18")},
	})
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, want := range []string{"PostgreSQL 18 beside 15", "PostgreSQL 18.6", "PostgreSQL 15.18"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	var create, restore string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, "ec2: create  "):
			create = l
		case strings.Contains(l, "restore: scale 68"):
			restore = l
		}
	}
	if !strings.Contains(create, "21.00 s [20.00-22.00]") || !strings.Contains(create, "31.00 s [30.00-32.00]") ||
		strings.Index(create, "21.00") > strings.Index(create, "31.00") {
		t.Errorf("create row %q: want 18's median, then 15's", create)
	}
	if !strings.HasSuffix(strings.TrimSpace(restore), "-") {
		t.Errorf("restore row %q: want - for 15, which has none", restore)
	}
}
