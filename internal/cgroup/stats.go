//go:build linux

package cgroup

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// Stats are a group's counters.
type Stats struct {
	// MemoryBytes is the memory charged to the group now, page cache included; MaxMemoryBytes the most it
	// was charged since it was made (v1 memory.max_usage_in_bytes, v2 memory.peak).
	MemoryBytes, MaxMemoryBytes int64
	// ReadIOs, WriteIOs, ReadBytes and WriteBytes count I/O the group issued to the device (v1
	// blkio.throttle.io_serviced and io_service_bytes, v2 io.stat).
	ReadIOs, WriteIOs, ReadBytes, WriteBytes int64
}

// Stats reads group's counters, the I/O ones for dev.
func (h *Hierarchy) Stats(group string, dev Device) (Stats, error) {
	dirs, err := h.dirs(group)
	if err != nil {
		return Stats{}, err
	}
	var out Stats
	num := func(path string) (int64, error) {
		s, err := readTrim(path)
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(s, 10, 64)
	}
	if h.v2 {
		if out.MemoryBytes, err = num(filepath.Join(dirs[0], "memory.current")); err != nil {
			return out, err
		}
		if out.MaxMemoryBytes, err = num(filepath.Join(dirs[0], "memory.peak")); err != nil {
			return out, fmt.Errorf("%w (memory.peak needs Linux 5.19)", err)
		}
		lines, err := readLines(filepath.Join(dirs[0], "io.stat"))
		if err != nil {
			return out, err
		}
		for _, line := range lines {
			f := strings.Fields(line)
			if len(f) > 0 && f[0] == dev.String() {
				kv := keyValues(f[1:])
				out.ReadIOs, out.WriteIOs, out.ReadBytes, out.WriteBytes = kv["rios"], kv["wios"], kv["rbytes"], kv["wbytes"]
			}
		}
		return out, nil
	}
	if out.MemoryBytes, err = num(filepath.Join(dirs[0], "memory.usage_in_bytes")); err != nil {
		return out, err
	}
	if out.MaxMemoryBytes, err = num(filepath.Join(dirs[0], "memory.max_usage_in_bytes")); err != nil {
		return out, err
	}
	for _, f := range []struct {
		name        string
		read, write *int64
	}{
		{"blkio.throttle.io_serviced", &out.ReadIOs, &out.WriteIOs},
		{"blkio.throttle.io_service_bytes", &out.ReadBytes, &out.WriteBytes},
	} {
		lines, err := readLines(filepath.Join(dirs[1], f.name))
		if err != nil {
			return out, err
		}
		for _, line := range lines {
			p := strings.Fields(line)
			if len(p) != 3 || p[0] != dev.String() {
				continue
			}
			n, _ := strconv.ParseInt(p[2], 10, 64)
			switch p[1] {
			case "Read":
				*f.read = n
			case "Write":
				*f.write = n
			}
		}
	}
	return out, nil
}
