package main

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Where the storage section's two nodes keep their disk images (-storage-disk).
const (
	// storageDiskMemory puts both images on a tmpfs the bench mounts for the section: the NVMe-like node's
	// loop device then costs what the kernel's loop driver and XFS cost and nothing else, and the gp3-like
	// node's latency is the latency layer's alone; neither depends on this machine's own disk, whose
	// latency differs from machine to machine and from day to day.
	storageDiskMemory = "memory"
	// storageDiskMachine puts both images on this machine's disk (under the temporary directory), as the
	// storage-lab example does with a data_dir on disk: the NVMe-like node is then as fast as that disk.
	storageDiskMachine = "machine"
)

// storageImageGiB is the most each node's image is expected to hold by the end of the section: the dataset
// (table and index, 4.0 GiB of it for 4 GiB of pgbench data), half as much again for the UPDATEs' bloat, and
// 2 GiB of WAL (max_wal_size is 1 GB; the logical-decoding backlog is kept beside it). A bench run measured
// 5.7 GiB after the NVMe-like vs gp3-like pairs; the section prints what both used at its end.
func storageImageGiB(datasetGiB float64) int64 { return int64(math.Ceil(datasetGiB*1.5)) + 2 }

// storageMemoryHeadroomGiB is what the machine must keep beyond the two images: the nodes' own memory
// limits, Terraform, pgbench and the page cache of everything else.
const storageMemoryHeadroomGiB = 3

// storageScratch makes the directory both nodes' data_dir live under and returns it with what removes it.
// With storageDiskMemory it is a tmpfs of room for both images, refused when the machine's available
// memory cannot hold them (tmpfs pages cannot be swapped out on a machine without swap, and a tmpfs that
// fills up fails the loop device's writes).
func storageScratch(kind string, datasetGiB float64) (dir string, remove func() error, err error) {
	dir, err = os.MkdirTemp("", "pgnvme-bench-lim-")
	if err != nil {
		return "", nil, err
	}
	removeDir := func() error { return os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", nil, err
	}
	switch kind {
	case storageDiskMachine:
		return dir, removeDir, nil
	case storageDiskMemory:
	default:
		_ = removeDir()
		return "", nil, fmt.Errorf("-storage-disk %q: want %q (both nodes' disk images in memory) or %q (on this machine's disk)", kind, storageDiskMemory, storageDiskMachine)
	}
	need := 2 * storageImageGiB(datasetGiB)
	avail, err := memAvailableGiB()
	if err == nil {
		err = roomInMemory(need, avail)
	}
	if err != nil {
		_ = removeDir()
		return "", nil, err
	}
	if err := syscall.Mount("pgnvme-bench-lim", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%dg,mode=0755", need)); err != nil {
		_ = removeDir()
		return "", nil, fmt.Errorf("mounting a tmpfs at %s for the disk images (needs root): %w", dir, err)
	}
	return dir, func() error {
		if err := syscall.Unmount(dir, 0); err != nil {
			return fmt.Errorf("unmounting the tmpfs at %s: %w", dir, err)
		}
		return removeDir()
	}, nil
}

// roomInMemory refuses images of need GiB in memory when avail GiB cannot hold them and the headroom.
func roomInMemory(need int64, avail float64) error {
	if avail < float64(need+storageMemoryHeadroomGiB) {
		return fmt.Errorf("both nodes' disk images in memory need %d GiB for the images and %d GiB beside them; this machine has %.1f GiB available: free memory, or run with -storage-disk %s to keep them on this machine's disk",
			need, storageMemoryHeadroomGiB, avail, storageDiskMachine)
	}
	return nil
}

// usedGiB is what the file system holding dir has in use.
func usedGiB(dir string) (float64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return float64((st.Blocks-st.Bfree)*uint64(st.Bsize)) / (1 << 30), nil //nolint:gosec // Bsize is positive
}

// memAvailableGiB is the kernel's estimate of the memory available to new work (MemAvailable).
func memAvailableGiB() (float64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kib, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: %q: %w", sc.Text(), err)
			}
			return kib / (1 << 20), nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/meminfo has no MemAvailable line")
}
