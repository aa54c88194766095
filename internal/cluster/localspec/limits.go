package localspec

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// Limits are the local platform's per-node resource limits: each node's server processes run in their own
// cgroup with these limits, and with any I/O limit (or a disk size) each node's data lives on its own block
// device (a loop device on a sparse file), so the I/O limits apply to that node alone. Zero means no limit.
type Limits struct {
	// MemoryMiB caps the memory of the node's server processes, page cache included (cgroup v1
	// memory.limit_in_bytes, v2 memory.max).
	MemoryMiB int64
	// ReadIOPS and WriteIOPS cap the I/O operations per second on the node's device.
	ReadIOPS, WriteIOPS int64
	// ReadMiBPerSecond and WriteMiBPerSecond cap the throughput on the node's device, in MiB/s.
	ReadMiBPerSecond, WriteMiBPerSecond int64
	// DiskGiB is the size of the node's own device; after WithDefaults it is DefaultDiskGiB when an I/O limit
	// asks for a device and none was given, and 0 when the node has no device of its own.
	DiskGiB int64
	// ReadLatencyMS, WriteLatencyMS and FlushLatencyMS are the least time, in milliseconds, that each read,
	// each write and each cache flush (fsync) of the node's device takes: its image is served through a FUSE
	// layer that holds each request that long (internal/latencydisk). The IOPS and throughput caps apply on
	// top, on the loop device above it.
	ReadLatencyMS, WriteLatencyMS, FlushLatencyMS float64
}

// Bounds and defaults of Limits.
const (
	// DefaultDiskGiB is the size of each node's device when an I/O limit asks for one and disk_gib is not
	// given. The file behind it is sparse: it takes only what the node writes.
	DefaultDiskGiB = 16
	// MemoryHeadroomMiB is what a memory limit must leave beyond shared_buffers: backends, work_mem, WAL
	// buffers and some page cache. Below it the kernel's OOM killer ends backends under load.
	MemoryHeadroomMiB = 64
	// DefaultSharedBuffersBytes is PostgreSQL's own shared_buffers when the parameters do not set it.
	DefaultSharedBuffersBytes = 128 << 20
	// MaxMemoryMiB, MaxIOPS, MaxMiBPerSecond and MaxDiskGiB bound the limits from above (well past any
	// machine this runs on; they catch unit mistakes).
	MaxMemoryMiB    = 4 << 20 // 4 TiB
	MaxIOPS         = 10_000_000
	MaxMiBPerSecond = 1_000_000
	MaxDiskGiB      = 64 << 10 // 64 TiB
	// MaxLatencyMS bounds each latency: a volume slower than a second per I/O is a unit mistake (the
	// latencies are in milliseconds), and PostgreSQL on it would only time out.
	MaxLatencyMS = 1000
)

// IO reports whether any I/O limit is set.
func (l *Limits) IO() bool {
	return l != nil && (l.ReadIOPS > 0 || l.WriteIOPS > 0 || l.ReadMiBPerSecond > 0 || l.WriteMiBPerSecond > 0)
}

// Latency reports whether any latency is set: each node's device is then served through the latency layer.
func (l *Limits) Latency() bool {
	return l != nil && (l.ReadLatencyMS > 0 || l.WriteLatencyMS > 0 || l.FlushLatencyMS > 0)
}

// Device reports whether each node's data lives on its own device (after WithDefaults).
func (l *Limits) Device() bool { return l != nil && l.DiskGiB > 0 }

// zero reports whether l sets nothing.
func (l *Limits) zero() bool { return l == nil || *l == Limits{} }

// withDefaults is l with DiskGiB filled in; nil when l sets nothing.
func (l *Limits) withDefaults() *Limits {
	if l.zero() {
		return nil
	}
	out := *l
	if out.DiskGiB == 0 && (out.IO() || out.Latency()) {
		out.DiskGiB = DefaultDiskGiB
	}
	return &out
}

// ReplacementReason says why going from old to new limits needs new nodes (each node's device appears,
// disappears or changes size, or the latency layer under it appears or disappears), "" when the change is
// applied in place (memory, IOPS and throughput are rewritten in the node's cgroup, latencies in the running
// latency layer). Both are as WithDefaults returns them.
func ReplacementReason(old, new *Limits) string {
	switch od, nd := old.Device(), new.Device(); {
	case !od && nd:
		return "each node's data moves to its own block device (an I/O limit, a latency or disk_gib is now set)"
	case od && !nd:
		return "each node's data leaves its own block device (no I/O limit, latency or disk_gib is set any more)"
	case od && nd && old.DiskGiB != new.DiskGiB:
		return fmt.Sprintf("each node's block device changes size (%d GiB -> %d GiB)", old.DiskGiB, new.DiskGiB)
	case od && nd && !old.Latency() && new.Latency():
		return "each node's block device moves onto the latency layer (a latency is now set; its loop device must be attached to the layer's file)"
	case od && nd && old.Latency() && !new.Latency():
		return "each node's block device leaves the latency layer (no latency is set any more)"
	}
	return ""
}

// SharedBuffersBytes is shared_buffers as parameters set it (PostgreSQL's default when they do not); ok is
// false when the value cannot be read.
func SharedBuffersBytes(parameters map[string]string) (int64, bool) {
	for k, v := range parameters {
		if strings.EqualFold(k, "shared_buffers") {
			b, err := capacity.ParseMemory(v, capacity.BlockBytes)
			return b, err == nil
		}
	}
	return DefaultSharedBuffersBytes, true
}

// validateLimits checks the limits' ranges and that a memory limit leaves room beyond shared_buffers.
func validateLimits(s cluster.Spec, l *Limits) []*cluster.FieldError {
	var out []*cluster.FieldError
	at := func(name string) []string { return []string{"local", "limits", name} }
	for _, f := range []struct {
		name  string
		value int64
		max   int64
		unit  string
	}{
		{"memory_mib", l.MemoryMiB, MaxMemoryMiB, "MiB"},
		{"read_iops", l.ReadIOPS, MaxIOPS, "operations per second"},
		{"write_iops", l.WriteIOPS, MaxIOPS, "operations per second"},
		{"read_mib_per_second", l.ReadMiBPerSecond, MaxMiBPerSecond, "MiB/s"},
		{"write_mib_per_second", l.WriteMiBPerSecond, MaxMiBPerSecond, "MiB/s"},
		{"disk_gib", l.DiskGiB, MaxDiskGiB, "GiB"},
	} {
		switch {
		case f.value < 0:
			out = append(out, cluster.Errorf(at(f.name), "Invalid Limit", "local.limits.%s is %d; give a positive number of %s, or leave it unset (or 0) for no limit.", f.name, f.value, f.unit))
		case f.value > f.max:
			out = append(out, cluster.Errorf(at(f.name), "Invalid Limit", "local.limits.%s is %d %s, more than the %d this platform accepts: check the unit (%s).", f.name, f.value, f.unit, f.max, f.unit))
		}
	}
	for _, f := range []struct {
		name  string
		value float64
	}{
		{"read_latency_ms", l.ReadLatencyMS}, {"write_latency_ms", l.WriteLatencyMS}, {"flush_latency_ms", l.FlushLatencyMS},
	} {
		v := strconv.FormatFloat(f.value, 'f', -1, 64)
		switch {
		case math.IsNaN(f.value) || f.value < 0:
			out = append(out, cluster.Errorf(at(f.name), "Invalid Latency", "local.limits.%s is %s; give a latency in milliseconds (gp3's is about 1), or leave it unset (or 0) for none.", f.name, v))
		case f.value > MaxLatencyMS:
			out = append(out, cluster.Errorf(at(f.name), "Invalid Latency", "local.limits.%s is %s ms, more than the %d ms this platform accepts: the unit is milliseconds (0.5 is half a millisecond; gp3's is about 1).", f.name, v, MaxLatencyMS))
		}
	}
	if l.MemoryMiB > 0 {
		sb, ok := SharedBuffersBytes(s.Parameters)
		if ok {
			need := ceilMiB(sb) + MemoryHeadroomMiB
			if l.MemoryMiB < need {
				lower := fmt.Sprintf("or lower shared_buffers (pgnvme_tuning with memory_gib = %s sizes it for this limit)",
					strconv.FormatFloat(float64(l.MemoryMiB)/1024, 'f', -1, 64))
				if gib := float64(l.MemoryMiB) / 1024; gib < capacity.MinMemoryGiB {
					// pgnvme_tuning sizes nothing smaller: suggesting it would only move the error.
					lower = fmt.Sprintf("or lower shared_buffers by hand (pgnvme_tuning sizes machines of %g GiB and more, which this limit is below)", capacity.MinMemoryGiB)
				}
				out = append(out, cluster.Errorf(at("memory_mib"), "Memory Limit Too Small",
					"local.limits.memory_mib is %d, but shared_buffers is %s MiB and the servers need at least %d MiB more for connections, work_mem and WAL buffers: "+
						"set memory_mib to at least %d, %s.",
					l.MemoryMiB, strconv.FormatInt(ceilMiB(sb), 10), MemoryHeadroomMiB, need, lower))
			}
		}
	}
	return out
}

func ceilMiB(b int64) int64 { return (b + (1<<20 - 1)) >> 20 }

// DevicesPending reports whether an apply that leaves the nodes as planned makes a block device whose
// number is not known yet: with a device per node (l.Device), every node of a new cluster (exists false)
// and a node planned without one.
func DevicesPending(l *Limits, planned []cluster.Member, exists bool) bool {
	if !l.Device() {
		return false
	}
	return slices.ContainsFunc(planned, func(m cluster.Member) bool { return m.BlockDevice == "" || !exists })
}
