package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// tmpfsMagic is statfs(2)'s f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// With -storage-disk memory the section's directory is a tmpfs of room for both images, written to like
// any directory, and removing it unmounts it and leaves nothing; with machine it is a plain directory on
// the machine's disk.
func TestStorageScratch(t *testing.T) {
	dir, remove, err := storageScratch(storageDiskMemory, 0)
	if err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != tmpfsMagic {
		_ = remove()
		t.Fatalf("%s has file system type %#x, want a tmpfs (%#x)", dir, st.Type, tmpfsMagic)
	}
	if got, want := int64(st.Blocks)*st.Bsize, 2*storageImageGiB(0)<<30; got != want { //nolint:gosec // sizes fit
		t.Errorf("the tmpfs holds %d bytes, want %d (two images)", got, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), make([]byte, 1<<20), 0o644); err != nil {
		t.Error(err)
	}
	if used, err := usedGiB(dir); err != nil || used < 1.0/1024 {
		t.Errorf("usedGiB after writing 1 MiB: %v, %v", used, err)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s after removing it: %v, want it gone (and unmounted)", dir, err)
	}

	dir, remove, err = storageScratch(storageDiskMachine, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Statfs(dir, &st); err != nil || st.Type == tmpfsMagic {
		t.Errorf("-storage-disk machine gave %s of type %#x (%v), want the temporary directory's file system", dir, st.Type, err)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}

	if _, _, err := storageScratch("nvme", 4); err == nil || !strings.Contains(err.Error(), `want "memory"`) {
		t.Errorf("an unknown -storage-disk: %v, want it refused naming the choices", err)
	}
}

// The images' room is refused when the machine's available memory cannot hold them and the headroom,
// naming the flag that keeps them on disk.
func TestRoomInMemory(t *testing.T) {
	need := 2 * storageImageGiB(4.2)
	if err := roomInMemory(need, float64(need+storageMemoryHeadroomGiB)); err != nil {
		t.Errorf("exactly enough memory: %v", err)
	}
	err := roomInMemory(need, float64(need))
	if err == nil || !strings.Contains(err.Error(), "-storage-disk machine") {
		t.Errorf("too little memory: %v, want a refusal naming -storage-disk machine", err)
	}
}
