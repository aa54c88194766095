//go:build linux

package cgroup

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Limits are what Set writes. Zero means no limit.
type Limits struct {
	// MemoryBytes caps the group's memory, page cache included.
	MemoryBytes int64
	// Device is the block device the I/O limits apply to; the zero Device means no I/O limits.
	Device Device
	// ReadIOPS, WriteIOPS, ReadBPS and WriteBPS cap I/O on Device (BPS: bytes per second).
	ReadIOPS, WriteIOPS, ReadBPS, WriteBPS int64
}

// Set writes l into group (which must exist): every value, so a limit that is now zero is removed. On v1
// lowering memory below what the group uses makes the kernel reclaim; it fails when it cannot.
func (h *Hierarchy) Set(group string, l Limits) error {
	dirs, err := h.dirs(group)
	if err != nil {
		return err
	}
	if h.v2 {
		d := dirs[0]
		mem := "max"
		if l.MemoryBytes > 0 {
			mem = strconv.FormatInt(l.MemoryBytes, 10)
		}
		if err := write(filepath.Join(d, "memory.max"), mem); err != nil {
			return err
		}
		if l.Device.IsZero() {
			return nil
		}
		v := func(n int64) string {
			if n <= 0 {
				return "max"
			}
			return strconv.FormatInt(n, 10)
		}
		return write(filepath.Join(d, "io.max"), fmt.Sprintf("%s riops=%s wiops=%s rbps=%s wbps=%s", l.Device, v(l.ReadIOPS), v(l.WriteIOPS), v(l.ReadBPS), v(l.WriteBPS)))
	}
	mem := "-1"
	if l.MemoryBytes > 0 {
		mem = strconv.FormatInt(l.MemoryBytes, 10)
	}
	if err := write(filepath.Join(dirs[0], "memory.limit_in_bytes"), mem); err != nil {
		return fmt.Errorf("%w (a limit below what the node uses now cannot always be reclaimed: stop the load or raise the limit)", err)
	}
	if l.Device.IsZero() {
		return nil
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"blkio.throttle.read_iops_device", l.ReadIOPS}, {"blkio.throttle.write_iops_device", l.WriteIOPS},
		{"blkio.throttle.read_bps_device", l.ReadBPS}, {"blkio.throttle.write_bps_device", l.WriteBPS},
	} {
		// "MAJ:MIN 0" removes the device's rule.
		if err := write(filepath.Join(dirs[1], f.name), fmt.Sprintf("%s %d", l.Device, max(f.v, 0))); err != nil {
			return err
		}
	}
	return nil
}

// Get reads back the limits in force in group for dev (the zero Device: memory only).
func (h *Hierarchy) Get(group string, dev Device) (Limits, error) {
	dirs, err := h.dirs(group)
	if err != nil {
		return Limits{}, err
	}
	out := Limits{Device: dev}
	if h.v2 {
		s, err := readTrim(filepath.Join(dirs[0], "memory.max"))
		if err != nil {
			return out, err
		}
		if s != "max" {
			if out.MemoryBytes, err = strconv.ParseInt(s, 10, 64); err != nil {
				return out, fmt.Errorf("memory.max %q: %w", s, err)
			}
		}
		if dev.IsZero() {
			return out, nil
		}
		lines, err := readLines(filepath.Join(dirs[0], "io.max"))
		if err != nil {
			return out, err
		}
		for _, line := range lines {
			f := strings.Fields(line)
			if len(f) == 0 || f[0] != dev.String() {
				continue
			}
			kv := keyValues(f[1:])
			out.ReadIOPS, out.WriteIOPS, out.ReadBPS, out.WriteBPS = kv["riops"], kv["wiops"], kv["rbps"], kv["wbps"]
		}
		return out, nil
	}
	s, err := readTrim(filepath.Join(dirs[0], "memory.limit_in_bytes"))
	if err != nil {
		return out, err
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n < 1<<62 {
		out.MemoryBytes = n
	}
	if dev.IsZero() {
		return out, nil
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{
		{"blkio.throttle.read_iops_device", &out.ReadIOPS}, {"blkio.throttle.write_iops_device", &out.WriteIOPS},
		{"blkio.throttle.read_bps_device", &out.ReadBPS}, {"blkio.throttle.write_bps_device", &out.WriteBPS},
	} {
		lines, err := readLines(filepath.Join(dirs[1], f.name))
		if err != nil {
			return out, err
		}
		for _, line := range lines {
			p := strings.Fields(line)
			if len(p) == 2 && p[0] == dev.String() {
				*f.v, _ = strconv.ParseInt(p[1], 10, 64)
			}
		}
	}
	return out, nil
}
