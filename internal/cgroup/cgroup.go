//go:build linux

// Package cgroup is the adapter for Linux resource limits on a tree of processes: control groups (v1 with
// the memory and blkio controllers mounted at <root>/memory and <root>/blkio; v2 when <root> itself is a
// cgroup2 file system) and, in disk.go, loop-device disks, so an I/O limit applies to one tree's own
// device. It does I/O only: which limits a node gets is the caller's decision. Writing cgroup files, loop
// devices and mounts need root.
//
// A group is named by its path relative to each controller's root, such as "pgnvme/demo-1a2b3c4d/node-1";
// on v1 it exists once per controller (memory, blkio), on v2 once.
package cgroup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// DefaultRoot is where cgroup file systems are mounted.
const DefaultRoot = "/sys/fs/cgroup"

// cgroup2Magic is CGROUP2_SUPER_MAGIC, the f_type of a cgroup2 file system.
const cgroup2Magic = 0x63677270

// v1Controllers are the v1 controllers a group is made in.
var v1Controllers = []string{"memory", "blkio"}

// Hierarchy is the cgroup file systems under one root.
type Hierarchy struct {
	root string
	v2   bool
}

// Open looks at root (DefaultRoot when "") and says which cgroup version it holds: v2 when root is a
// cgroup2 mount, else v1. Whether the controllers are there is Check's question.
func Open(root string) *Hierarchy {
	if root == "" {
		root = DefaultRoot
	}
	h := &Hierarchy{root: filepath.Clean(root)}
	var st syscall.Statfs_t
	if err := syscall.Statfs(h.root, &st); err == nil && st.Type == cgroup2Magic {
		h.v2 = true
	}
	return h
}

// Version is 1 or 2.
func (h *Hierarchy) Version() int {
	if h.v2 {
		return 2
	}
	return 1
}

// Check says, changing nothing, whether this machine can limit memory and I/O here: the controllers are
// available and the caller may create groups (root). The error says what is missing and what to do.
func (h *Hierarchy) Check() error {
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, errors.New("limits need root: cgroups, loop devices and mounts are root's; run Terraform as root or remove local.limits"))
	}
	if h.v2 {
		b, err := os.ReadFile(filepath.Join(h.root, "cgroup.controllers"))
		if err != nil {
			return errors.Join(append(errs, fmt.Errorf("%s is a cgroup v2 file system, but its controllers cannot be read: %w", h.root, err))...)
		}
		have := strings.Fields(string(b))
		for _, c := range []string{"memory", "io"} {
			if !slices.Contains(have, c) {
				errs = append(errs, fmt.Errorf("the cgroup v2 controller %q is not available in %s (cgroup.controllers: %q): enable it in the kernel "+
					"(or on the kernel command line), or remove local.limits", c, h.root, strings.TrimSpace(string(b))))
			}
		}
		return errors.Join(errs...)
	}
	for _, f := range []string{"memory/memory.limit_in_bytes", "blkio/blkio.throttle.read_iops_device"} {
		if _, err := os.Stat(filepath.Join(h.root, f)); err != nil {
			c := strings.Split(f, "/")[0]
			errs = append(errs, fmt.Errorf("no cgroup %s controller at %s (cgroup v1: %s missing; v2: %s is not a cgroup2 mount): "+
				"mount it (mount -t cgroup -o %s cgroup %s) or remove local.limits",
				c, filepath.Join(h.root, c), filepath.Join(h.root, f), h.root, c, filepath.Join(h.root, c)))
		}
	}
	return errors.Join(errs...)
}

// dirs are group's directories, one per controller (one on v2).
func (h *Hierarchy) dirs(group string) ([]string, error) {
	clean := filepath.Clean("/" + group)
	if clean == "/" || strings.Contains(group, "..") {
		return nil, fmt.Errorf("cgroup %q: give a relative path below the root, such as pgnvme/demo/node-1", group)
	}
	if h.v2 {
		return []string{filepath.Join(h.root, clean)}, nil
	}
	out := make([]string, 0, len(v1Controllers))
	for _, c := range v1Controllers {
		out = append(out, filepath.Join(h.root, c, clean))
	}
	return out, nil
}

// controllerRoots are the roots groups are made under.
func (h *Hierarchy) controllerRoots() []string {
	if h.v2 {
		return []string{h.root}
	}
	out := make([]string, 0, len(v1Controllers))
	for _, c := range v1Controllers {
		out = append(out, filepath.Join(h.root, c))
	}
	return out
}

// Path is group's directory in the memory controller (v1) or the unified hierarchy (v2), for messages.
func (h *Hierarchy) Path(group string) string {
	d, err := h.dirs(group)
	if err != nil {
		return group
	}
	return d[0]
}

// Exists reports whether group exists in any controller.
func (h *Hierarchy) Exists(group string) bool {
	dirs, err := h.dirs(group)
	if err != nil {
		return false
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			return true
		}
	}
	return false
}

// Ensure makes group (and its parents) in every controller; on v2 it enables the memory and io controllers
// for the children of every ancestor on the way. An existing group is left as it is.
func (h *Hierarchy) Ensure(group string) error {
	dirs, err := h.dirs(group)
	if err != nil {
		return err
	}
	for i, d := range dirs {
		root := h.controllerRoots()[i]
		rel, _ := filepath.Rel(root, d)
		cur := root
		for _, part := range strings.Split(rel, string(filepath.Separator)) {
			if h.v2 {
				if err := enableV2(cur); err != nil {
					return err
				}
			}
			cur = filepath.Join(cur, part)
			if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("creating cgroup %s: %w", cur, err)
			}
		}
	}
	return nil
}

// enableV2 lets dir's children use the memory and io controllers.
func enableV2(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	have := strings.Fields(string(b))
	if slices.Contains(have, "memory") && slices.Contains(have, "io") {
		return nil
	}
	return write(filepath.Join(dir, "cgroup.subtree_control"), "+memory +io")
}

// Device is a block device's number.
type Device struct{ Major, Minor uint32 }

func (d Device) String() string { return fmt.Sprintf("%d:%d", d.Major, d.Minor) }

// IsZero reports whether d names no device.
func (d Device) IsZero() bool { return d == Device{} }

// keyValues reads "riops=3000 wiops=max" into numbers; "max" is 0 (no limit).
func keyValues(fields []string) map[string]int64 {
	out := map[string]int64{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok || v == "max" {
			continue
		}
		out[k], _ = strconv.ParseInt(v, 10, 64)
	}
	return out
}

// Join moves process pid (all its threads) into group in every controller. Its children started from now
// on are born there; children it has already are not moved (move them one by one).
func (h *Hierarchy) Join(group string, pid int) error {
	dirs, err := h.dirs(group)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := write(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("moving PID %d into cgroup %s: %w", pid, d, err)
		}
	}
	return nil
}

// Contains reports whether process pid is in group: on v1 in both its controllers, on v2 in the unified
// hierarchy. It reads the process's own /proc/PID/cgroup, not the group's cgroup.procs, which stops listing
// a process once its exit began while /proc still shows it running. A process that no longer exists, or is
// exiting, is an error wrapping fs.ErrNotExist: no group takes an exiting process, and v1 reports one in
// the root group whatever its group was.
func (h *Hierarchy) Contains(group string, pid int) (bool, error) {
	if _, err := h.dirs(group); err != nil {
		return false, err
	}
	want := filepath.Clean("/" + group)
	gone := fmt.Errorf("PID %d has ended or is exiting: %w", pid, fs.ErrNotExist)
	lines, err := readLines("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		if ex, serr := exiting(pid); serr != nil || ex {
			return false, gone // reaped (ENOENT) or ending (ESRCH) while being read
		}
		return false, fmt.Errorf("reading the cgroups of PID %d: %w", pid, err)
	}
	in := map[string]bool{}
	for _, l := range lines {
		// hierarchy-ID:controller-list:path; v2's line has ID 0 and no controllers.
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 || parts[2] != want {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			in["unified"] = true
		}
		for _, c := range strings.Split(parts[1], ",") {
			in[c] = true
		}
	}
	member := in["unified"]
	if !h.v2 {
		member = in[v1Controllers[0]] && in[v1Controllers[1]]
	}
	if member {
		return true, nil
	}
	// Read after the cgroups: a process not exiting now was not exiting when they were read.
	if ex, err := exiting(pid); errors.Is(err, fs.ErrNotExist) || ex {
		return false, gone
	} else if err != nil {
		return false, err
	}
	return false, nil
}

// pfExiting is PF_EXITING in /proc/PID/stat's flags: the process has begun to exit (it never clears).
const pfExiting = 0x4

// exiting reports whether process pid has begun to exit, from the flags in /proc/PID/stat (the ninth
// field; the command name before it is in parentheses and may hold spaces).
func exiting(pid int) (bool, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, syscall.ESRCH) { // reaped between the open and the read
		return false, fmt.Errorf("PID %d: %w", pid, fs.ErrNotExist)
	}
	if err != nil {
		return false, err
	}
	end := strings.LastIndexByte(string(b), ')')
	fields := strings.Fields(string(b[end+1:]))
	if end < 0 || len(fields) < 7 {
		return false, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	flags, err := strconv.ParseUint(fields[6], 10, 64)
	if err != nil {
		return false, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return flags&pfExiting != 0, nil
}

// How long Remove keeps moving processes out of a group that is still busy.
const (
	removeTimeout  = 10 * time.Second
	removeInterval = 20 * time.Millisecond
)

// Remove removes group from every controller: the processes still in it are moved to the root group
// first, then its directory, then every parent that is left empty, up to (not including) the controller
// root. A group that does not exist is success; a parent that other groups still use stays.
func (h *Hierarchy) Remove(group string) error {
	dirs, err := h.dirs(group)
	if err != nil {
		return err
	}
	var errs []error
	for i, d := range dirs {
		root := h.controllerRoots()[i]
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		// A server may fork a backend while its processes move out, and that child lands in the group: move
		// again until the group is empty and goes (rmdir fails with EBUSY while anything is in it).
		err := wait.Until(context.Background(), "cgroup "+d+" to be empty and removed", removeTimeout, removeInterval, wait.Real, func(context.Context) (bool, error) {
			lines, err := readLines(filepath.Join(d, "cgroup.procs"))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return false, err
			}
			for _, l := range lines {
				// A process that ended meanwhile is fine (ESRCH).
				if err := write(filepath.Join(root, "cgroup.procs"), l); err != nil && !errors.Is(err, syscall.ESRCH) {
					return false, fmt.Errorf("moving PID %s out of cgroup %s: %w", l, d, err)
				}
			}
			switch err := os.Remove(d); {
			case err == nil, errors.Is(err, fs.ErrNotExist):
				return true, nil
			case errors.Is(err, syscall.EBUSY):
				return false, wait.NotYet(fmt.Errorf("removing cgroup %s: %w", d, err))
			default:
				return false, fmt.Errorf("removing cgroup %s: %w", d, err)
			}
		})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for p := filepath.Dir(d); p != root && strings.HasPrefix(p, root+"/"); p = filepath.Dir(p) {
			if os.Remove(p) != nil { // not empty (EBUSY): another group lives there
				break
			}
		}
	}
	return errors.Join(errs...)
}

// write writes s to a cgroup file (no truncation games: cgroup files take one value per write).
func write(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(s)
	cerr := f.Close()
	if werr != nil {
		return fmt.Errorf("writing %q to %s: %w", s, path, werr)
	}
	return cerr
}

func readTrim(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if t := strings.TrimSpace(s.Text()); t != "" {
			out = append(out, t)
		}
	}
	return out, s.Err()
}
