package localnode

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// This file holds what internal/localcluster needs beyond single-node
// operations: running other programs (pgBackRest) as the server's user,
// preparing and writing files owned by it, and reading pg_controldata.

// RunAsServerUser runs program (an absolute path, such as pgbackrest) with
// args as the run user, in its own session, in dir, with the engine's clean
// environment, and returns its standard output. A failure carries the
// program's name, how it ended and its standard error.
func (e *Engine) RunAsServerUser(ctx context.Context, dir, program string, args ...string) (string, error) {
	if !filepath.IsAbs(program) {
		return "", fmt.Errorf("running %s: give the program's absolute path", program)
	}
	cmd := e.serverCmd(ctx, dir, "", args...) // the server programs' user, session and environment
	cmd.Path = program
	cmd.Args = append([]string{program}, args...)
	out, _, err := run(cmd)
	return out, err
}

// PrepareDataDir makes n's data directory ready to be filled by another
// program (pgbackrest restore): its parents created, the directory itself
// empty (or absent, then created), mode 0700 and owned by the run user; and
// its socket directory.
func (e *Engine) PrepareDataDir(n Node) error {
	if err := n.Validate(); err != nil {
		return err
	}
	if err := e.prepareDataDir(n); err != nil {
		return fmt.Errorf("preparing the data directory of %s: %w", n.Name, err)
	}
	return nil
}

// MkdirAllOwned creates dir and its missing parents with perm, each owned by
// the run user. Directories that exist are left as they are.
func (e *Engine) MkdirAllOwned(dir string, perm os.FileMode) error {
	return e.mkdirAllOwned(dir, perm)
}

// WriteFileOwned replaces path atomically with data, owned by the run user.
func (e *Engine) WriteFileOwned(path string, data []byte, perm os.FileMode) error {
	return e.writeFile(path, data, perm)
}

// ControlData is what pg_controldata reports about a data directory.
type ControlData struct {
	// State is "Database cluster state": "shut down", "shut down in
	// recovery", "in production", "in archive recovery", ...
	State string
	// CheckpointLSN is "Latest checkpoint location"; RedoLSN is "Latest
	// checkpoint's REDO location".
	CheckpointLSN, RedoLSN string
	// TimeLineID is "Latest checkpoint's TimeLineID".
	TimeLineID int
	// MinRecoveryLSN and MinRecoveryTLI are "Minimum recovery ending
	// location" and its timeline (0/0 and 0 on a primary).
	MinRecoveryLSN string
	MinRecoveryTLI int
	// SystemID is "Database system identifier".
	SystemID string
	// WALSegmentSize is "Bytes per WAL segment" and WALBlockSize "WAL block
	// size" (bytes per WAL page).
	WALSegmentSize, WALBlockSize int
}

// ControlData runs pg_controldata on n's data directory (as the run user).
// It reads the control file only, so it works on a stopped node.
func (e *Engine) ControlData(ctx context.Context, n Node) (ControlData, error) {
	cmd := e.serverCmd(ctx, filepath.Dir(n.dataDir()), "pg_controldata", "-D", n.dataDir())
	out, _, err := run(cmd)
	if err != nil {
		return ControlData{}, fmt.Errorf("reading the control file of %s: %w", n.Name, err)
	}
	return parseControlData(out)
}

func parseControlData(out string) (ControlData, error) {
	var c ControlData
	var errs []string
	atoi := func(k, v string) int {
		i, err := strconv.Atoi(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s %q", k, v))
		}
		return i
	}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "Database cluster state":
			c.State = v
		case "Latest checkpoint location":
			c.CheckpointLSN = v
		case "Latest checkpoint's REDO location":
			c.RedoLSN = v
		case "Latest checkpoint's TimeLineID":
			c.TimeLineID = atoi(k, v)
		case "Minimum recovery ending location":
			c.MinRecoveryLSN = v
		case "Min recovery ending loc's timeline":
			c.MinRecoveryTLI = atoi(k, v)
		case "Database system identifier":
			c.SystemID = v
		case "Bytes per WAL segment":
			c.WALSegmentSize = atoi(k, v)
		case "WAL block size":
			c.WALBlockSize = atoi(k, v)
		}
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("pg_controldata output: unreadable %s", strings.Join(errs, ", "))
	}
	if c.State == "" || c.CheckpointLSN == "" || c.TimeLineID == 0 {
		return c, fmt.Errorf("pg_controldata output lacks the cluster state, checkpoint location or timeline:\n%s", out)
	}
	return c, nil
}
