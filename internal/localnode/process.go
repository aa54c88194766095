package localnode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// readPostmasterPID reads the PID from dir/postmaster.pid; 0 when there is none.
func readPostmasterPID(dir string) (int, error) {
	return readPIDFile(filepath.Join(dir, "postmaster.pid"))
}

// readPIDFile reads the PID on the first line of a PostgreSQL lock file; 0
// when the file does not exist or is empty.
func readPIDFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", path, err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	first = strings.TrimSpace(first)
	if first == "" {
		return 0, nil // being written, or truncated: no server to speak of
	}
	pid, err := strconv.Atoi(first)
	if err != nil {
		return 0, fmt.Errorf("%s starts with %q, not a PID", path, first)
	}
	if pid < 0 { // a socket lock file made by a standalone backend holds -PID
		pid = -pid
	}
	return pid, nil
}

// procStat is the part of /proc/PID/stat the engine reads.
type procStat struct {
	comm  string
	state byte
	ppid  int
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	s := string(b)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(s[end+1:])
	if len(fields) < 2 || len(fields[0]) != 1 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return procStat{comm: s[open+1 : end], state: fields[0][0], ppid: ppid}, nil
}

// pidAlive reports whether pid exists and is not a zombie.
func pidAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	st, err := readProcStat(pid)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist)
	}
	return st.state != 'Z' && st.state != 'X'
}

// isPostmasterOf reports whether pid is a live postgres process serving dir.
func isPostmasterOf(pid int, dir string) bool {
	if !pidAlive(pid) {
		return false
	}
	st, err := readProcStat(pid)
	if err != nil || st.comm != "postgres" {
		return false
	}
	// The postmaster's working directory is its data directory. Readable for
	// root and for the server's own user; otherwise trust the PID.
	cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	if err != nil {
		return true
	}
	if cwd == dir {
		return true
	}
	real, err := filepath.EvalSymlinks(dir)
	return err == nil && cwd == real
}

// childPIDs lists the live processes whose parent is pid.
func childPIDs(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var kids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		// A zombie (exited, not yet reaped by its parent) is no process of the server any more, and no
		// cgroup can take it: listing it made joining the server's processes to a cgroup look unfinished.
		if st, err := readProcStat(p); err == nil && st.ppid == pid && st.state != 'Z' && st.state != 'X' {
			kids = append(kids, p)
		}
	}
	return kids
}
