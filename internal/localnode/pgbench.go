package localnode

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// FindBinary finds a PostgreSQL program such as "pgbench": explicit when it
// is not empty (it must be an executable file), else name on PATH, else the
// newest /usr/lib/postgresql/*/bin/name.
func FindBinary(name, explicit string) (string, error) {
	if explicit != "" {
		if !isExecutable(explicit) {
			if _, err := os.Stat(explicit); err != nil {
				return "", fmt.Errorf("%s at %s: %w", name, explicit, err)
			}
			return "", fmt.Errorf("%s at %s is not an executable file", name, explicit)
		}
		return explicit, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if dirs := versionedBinDirs(name); len(dirs) > 0 {
		return filepath.Join(dirs[0], name), nil
	}
	return "", fmt.Errorf("%s not found on PATH or in %s/*/bin: install PostgreSQL (Debian/Ubuntu: apt-get install postgresql-15, "+
		"which brings pgbench and the client programs) or give the program's path", name, pgLibRoot)
}

// RunPgbench runs the pgbench at path with args, as the caller, and returns
// what it wrote to stdout and stderr. env is its whole environment, as
// exec.Cmd.Env (nil: the caller's). Each stderr line (progress reports,
// split at \n or \r) goes to onLine, when not nil, as it arrives. A
// non-zero exit is an error carrying the end of pgbench's own stderr. When
// ctx ends, pgbench gets SIGINT, then SIGKILL 10 s later.
func RunPgbench(ctx context.Context, path string, args, env []string, onLine func(string)) (stdout, stderr string, err error) {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	var out bytes.Buffer
	cmd.Stdout = &out
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return "", "", fmt.Errorf("running pgbench: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return "", "", fmt.Errorf("running pgbench %s: %w", path, err)
	}
	var errBuf strings.Builder
	sc := bufio.NewScanner(pipe)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	sc.Split(scanLinesCR)
	for sc.Scan() {
		line := sc.Text()
		errBuf.WriteString(line)
		errBuf.WriteByte('\n')
		if onLine != nil {
			onLine(line)
		}
	}
	if sc.Err() != nil { // a line longer than 4 MiB: keep the rest, unsplit
		_, _ = io.Copy(&errBuf, pipe)
	}
	err = cmd.Wait()
	stdout, stderr = out.String(), errBuf.String()
	if err != nil {
		msg := lastLines(stderr, 20)
		if msg == "" {
			msg = "(no output on stderr)"
		}
		if ctx.Err() != nil {
			return stdout, stderr, fmt.Errorf("pgbench stopped (%w): %w: %s", ctx.Err(), err, msg)
		}
		return stdout, stderr, fmt.Errorf("pgbench failed (%w): %s", err, msg)
	}
	return stdout, stderr, nil
}

// scanLinesCR is bufio.ScanLines that also ends a line at a lone \r (how
// pgbench -i reports progress on a terminal).
func scanLinesCR(data []byte, atEOF bool) (advance int, token []byte, err error) {
	if atEOF && len(data) == 0 {
		return 0, nil, nil
	}
	if i := bytes.IndexAny(data, "\r\n"); i >= 0 {
		if data[i] == '\r' {
			if i+1 < len(data) && data[i+1] == '\n' {
				return i + 2, data[:i], nil
			}
			if i+1 == len(data) && !atEOF {
				return 0, nil, nil // \r\n may be split across reads
			}
		}
		return i + 1, data[:i], nil
	}
	if atEOF {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// lastLines is the last n non-empty lines of s.
func lastLines(s string, n int) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, "\n")
}
