package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// postgresBin is the PostgreSQL a section runs: its major and the directory of that major's programs. The
// clusters get postgres_major = Major, pgnvme_tuning and the peer are asked about Major, and whatever the
// bench runs by hand (the floors' servers, pgbench) runs from BinDir.
type postgresBin struct {
	Major  int
	BinDir string
}

// findPostgres finds major's programs on this machine (localnode.BinDirForMajor), pgbench among them.
func findPostgres(ctx context.Context, major int) (postgresBin, error) {
	dir, err := localnode.BinDirForMajor(ctx, major)
	if err != nil {
		return postgresBin{}, err
	}
	pg := postgresBin{Major: major, BinDir: dir}
	if st, err := os.Stat(pg.pgbench()); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return postgresBin{}, fmt.Errorf("PostgreSQL %d in %s has no pgbench (its contrib or client programs are missing)", major, dir)
	}
	return pg, nil
}

// engine is a localnode engine on pg's binaries.
func (pg postgresBin) engine() (*localnode.Engine, error) {
	return localnode.New(localnode.Options{BinDir: pg.BinDir})
}

// pgbench is pg's pgbench.
func (pg postgresBin) pgbench() string { return filepath.Join(pg.BinDir, "pgbench") }

// Server is the PostgreSQL a section ran on: the major it asked for and the server_version a server it
// started reported (read from the server, so that a section that ran other binaries than it asked for
// fails instead of reporting them as the major asked for).
type Server struct {
	PostgresMajor int    `json:"postgres_major"`
	ServerVersion string `json:"server_version"`
}

// readServer reads the server_version of the server at port on 127.0.0.1 and checks that it is major's.
func readServer(ctx context.Context, port, major int) (Server, error) {
	conn, err := benchConnect(ctx, port)
	if err != nil {
		return Server{}, fmt.Errorf("reading server_version: %w", err)
	}
	defer conn.Close(context.Background())
	var version string
	var num int
	if err := conn.QueryRow(ctx, "SELECT current_setting('server_version'), current_setting('server_version_num')::int").Scan(&version, &num); err != nil {
		return Server{}, fmt.Errorf("reading server_version: %w", err)
	}
	return checkServer(major, version, num)
}

// checkServer is the Server of a server reporting version and version_num (server_version and
// server_version_num), refused when that is not major.
func checkServer(major int, version string, num int) (Server, error) {
	if num/10000 != major {
		return Server{}, fmt.Errorf("asked for PostgreSQL %d, the server runs %s (server_version_num %d)", major, version, num)
	}
	return Server{PostgresMajor: major, ServerVersion: version}, nil
}

// parseMajors reads -postgres-majors ("18,15"): distinct majors, in the order given.
func parseMajors(v string) ([]int, error) {
	var out []int
	for _, f := range splitList(v) {
		m, err := strconv.Atoi(f)
		if err != nil || m < 10 {
			return nil, fmt.Errorf("-postgres-majors %q: %q is no PostgreSQL major (want e.g. 18,15)", v, f)
		}
		if slices.Contains(out, m) {
			return nil, fmt.Errorf("-postgres-majors %q: %d named twice", v, m)
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-postgres-majors %q: no major", v)
	}
	return out, nil
}

// serverVersions are the distinct server_versions of servers, in order, joined by ", ".
func serverVersions(servers ...Server) string {
	var out []string
	for _, s := range servers {
		if s.ServerVersion != "" && !slices.Contains(out, s.ServerVersion) {
			out = append(out, s.ServerVersion)
		}
	}
	return strings.Join(out, ", ")
}
