package nodesim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// ownerFile is the file in a run's directory that names the process running it.
const ownerFile = "owner"

// idPattern is a run ID.
var idPattern = regexp.MustCompile(`^[0-9a-f]{6}$`)

// writeOwner records this process as the run's owner.
func (s *Sim) writeOwner() error {
	return os.WriteFile(filepath.Join(s.Dir, ownerFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// StaleRuns are the IDs of the runs under dir (the Options.Dir of their simulators) whose owning process
// is gone, for Clean after a crash (a test binary killed at its timeout runs no cleanup).
func StaleRuns(dir string) ([]string, error) {
	if dir == "" {
		dir = "/tmp"
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		id, ok := strings.CutPrefix(e.Name(), "nodesim-")
		if !ok || !idPattern.MatchString(id) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || syscall.Kill(pid, 0) == nil {
			continue
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// Clean removes what run id under dir left behind when its process died without Close: every process in
// its cgroups, the cgroups, its network namespaces (nodesim-<id>-*), the loop devices backed by files in
// its directory, and the directory. It refuses a run whose owner still runs.
func Clean(ctx context.Context, dir, id string) error {
	if dir == "" {
		dir = "/tmp"
	}
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%q is not a run ID (6 hex digits)", id)
	}
	runDir := filepath.Join(dir, "nodesim-"+id)
	if b, err := os.ReadFile(filepath.Join(runDir, ownerFile)); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && syscall.Kill(pid, 0) == nil {
			return fmt.Errorf("run %s is still owned by PID %d: stop that process instead", id, pid)
		}
	}
	var errs []error
	if root, err := cgroup2Root(); err == nil {
		top := filepath.Join(root, "nodesim-"+id)
		if _, err := os.Stat(top); err == nil {
			errs = append(errs, (&cgroup{path: top}).kill(ctx))
			var dirs []string
			_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			slices.Reverse(dirs) // children first
			for _, d := range dirs {
				errs = append(errs, (&cgroup{path: d}).remove(ctx))
			}
		}
	}
	if entries, err := os.ReadDir("/run/netns"); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "nodesim-"+id+"-") {
				errs = append(errs, delNetns(ctx, e.Name()))
			}
		}
	}
	if loops, err := filepath.Glob("/sys/block/loop*/loop/backing_file"); err == nil {
		for _, p := range loops {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			file := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
			if strings.HasPrefix(file, runDir+"/") {
				dev := "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(p)))
				errs = append(errs, (&disk{dev: dev, file: file}).detach(ctx))
			}
		}
	}
	if err := os.RemoveAll(runDir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
