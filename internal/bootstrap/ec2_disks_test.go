package bootstrap_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
)

// diskLab is a temporary directory with loop devices standing in for
// instance-store NVMe: by-id-like links under by-id/, a mount point under
// mnt/. Everything it makes is undone, by name, when the test ends.
type diskLab struct {
	t     *testing.T
	dir   string
	loops []string
}

// newDiskLab makes a lab; the test is skipped unless it runs as root (loop
// devices and mounts need root) and fails when a tool it needs is missing.
func newDiskLab(t *testing.T) *diskLab {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loop devices and mounts need root; run the tests as root to check the disk script")
	}
	needTool(t, "losetup", "mount")
	needTool(t, "mkfs.xfs", "xfsprogs")
	needTool(t, "blkid", "util-linux")
	needTool(t, "findmnt", "util-linux")
	// A directory name without characters the renderer refuses in paths.
	dir, err := os.MkdirTemp("", "pgnvme_disks_")
	if err != nil {
		t.Fatal(err)
	}
	lab := &diskLab{t: t, dir: dir}
	for _, d := range []string{"by-id", "mnt", "bin"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		mnt := lab.mountPoint()
		for exec.Command("mountpoint", "-q", mnt).Run() == nil {
			if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
				t.Errorf("cleanup: umount %s: %v\n%s", mnt, err, out)
				break
			}
		}
		for _, l := range lab.loops {
			if out, err := exec.Command("losetup", "-d", l).CombinedOutput(); err != nil {
				t.Errorf("cleanup: losetup -d %s: %v\n%s", l, err, out)
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return lab
}

func (l *diskLab) mountPoint() string { return filepath.Join(l.dir, "mnt") }

// disk attaches a sparse file of size bytes to a loop device and links it
// under by-id as instance-store disk i does on EC2: two links, as udev makes
// them (the namespace link ends in _1). It returns the loop device.
func (l *diskLab) disk(i int, size int64) string {
	l.t.Helper()
	img := filepath.Join(l.dir, fmt.Sprintf("disk%d.img", i))
	f, err := os.Create(img)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		l.t.Fatal(err)
	}
	_ = f.Close()
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		l.t.Fatalf("losetup --find --show %s: %v\n%s", img, err, out)
	}
	dev := strings.TrimSpace(string(out))
	l.loops = append(l.loops, dev)
	serial := fmt.Sprintf("nvme-Amazon_EC2_NVMe_Instance_Storage_AWSTEST%04d", i)
	for _, name := range []string{serial, serial + "_1"} {
		if err := os.Symlink(dev, filepath.Join(l.dir, "by-id", name)); err != nil {
			l.t.Fatal(err)
		}
	}
	return dev
}

// script renders the disk script of a node with disks disks whose
// instance store is the lab's, and writes it into the lab.
func (l *diskLab) script(disks int) string {
	l.t.Helper()
	c := ec2Cluster(walg, 16)
	n := ec2Host(c, "pg-a", disks, bootstrap.ArchX86_64)
	n.InstanceStoreGlob = filepath.Join(l.dir, "by-id", "*NVMe_Instance_Storage_*")
	n.MountPoint = l.mountPoint()
	n.DiskWaitSeconds = 2
	u, err := bootstrap.RenderEC2(c, n)
	if err != nil {
		l.t.Fatal(err)
	}
	f, ok := u.File("/usr/local/lib/pgnvme/disks.sh")
	if !ok {
		l.t.Fatal("no disk script rendered")
	}
	p := filepath.Join(l.dir, "disks.sh")
	if err := os.WriteFile(p, []byte(f.Content), 0o700); err != nil {
		l.t.Fatal(err)
	}
	return p
}

// run runs the disk script, with PGNVME_DISKS_DRY_RUN=1 when dry, and
// the lab's bin directory first on PATH.
func (l *diskLab) run(script string, dry bool, env ...string) (string, error) {
	cmd := exec.Command("/bin/bash", script)
	cmd.Env = append([]string{"PATH=" + filepath.Join(l.dir, "bin") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	if dry {
		cmd.Env = append(cmd.Env, "PGNVME_DISKS_DRY_RUN=1")
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// mounted returns the lab mount's source, UUID, file system type and
// options; "" when nothing is mounted there.
func (l *diskLab) mounted() (source, uuid, fstype, options string) {
	out, err := exec.Command("findmnt", "-rn", "-o", "SOURCE,UUID,FSTYPE,OPTIONS", "--mountpoint", l.mountPoint()).Output()
	if err != nil {
		return "", "", "", ""
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 {
		l.t.Fatalf("%d file systems mounted on %s:\n%s", len(lines), l.mountPoint(), out)
	}
	f := strings.Fields(lines[0])
	return f[0], f[1], f[2], f[3]
}

func blkidUUID(t *testing.T, dev string) string {
	t.Helper()
	out, err := exec.Command("blkid", "-p", "-o", "value", "-s", "UUID", dev).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// TestEC2DiskScript_oneDisk runs the rendered disk script against a loop
// device found through by-id-like links: it makes XFS, mounts it by UUID
// with noatime, makes the data directory one level below; a second run
// changes nothing; after an unmount (a reboot) it mounts the same file
// system again; a wiped device (a stop/start) gets a new file system; a
// device with another file system is refused.
func TestEC2DiskScript_oneDisk(t *testing.T) {
	lab := newDiskLab(t)
	dev := lab.disk(0, 320<<20) // XFS needs 300 MiB
	// Links that must not count: another kind of disk, a partition.
	for name, target := range map[string]string{
		"nvme-Amazon_Elastic_Block_Store_vol0123456789abcdef0":    "/dev/null",
		"nvme-Amazon_EC2_NVMe_Instance_Storage_AWSTEST0000-part1": dev + "p1",
	} {
		if err := os.Symlink(target, filepath.Join(lab.dir, "by-id", name)); err != nil {
			t.Fatal(err)
		}
	}
	script := lab.script(1)
	mnt := lab.mountPoint()
	data := filepath.Join(mnt, "data")

	// A dry run on the blank disk says what it would do and does nothing.
	out, err := lab.run(script, true)
	if err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, want := range []string{
		"+ mkfs.xfs -K -L pgnvme -l su=8b " + dev,
		"+ mount -t xfs -o noatime,nofail UUID=<uuid of " + dev + "> " + mnt,
		"+ install -d -m 0700 -o postgres -g postgres " + mnt,
		"+ install -d -m 0700 -o postgres -g postgres " + data + " " + filepath.Join(mnt, "walg-prefetch"),
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if blkidUUID(t, dev) != "" {
		t.Fatal("the dry run made a file system")
	}

	check := func(step string) string {
		t.Helper()
		source, uuid, fstype, options := lab.mounted()
		if source != dev || fstype != "xfs" || !slices.Contains(strings.Split(options, ","), "noatime") {
			t.Fatalf("%s: mounted %q %q %q on %s, want %s xfs with noatime", step, source, fstype, options, mnt, dev)
		}
		if want := blkidUUID(t, dev); uuid != want || uuid == "" {
			t.Fatalf("%s: mounted UUID %q, the device's %q", step, uuid, want)
		}
		// The mount point too: Patroni renames a failed bootstrap's data directory there, as postgres.
		for _, d := range []string{mnt, data, filepath.Join(mnt, "walg-prefetch")} {
			fi, err := os.Stat(d)
			if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Fatalf("%s: %s: %v %v, want a 0700 directory", step, d, fi, err)
			}
			if owner, _ := exec.Command("stat", "-c", "%U:%G", d).Output(); strings.TrimSpace(string(owner)) != "postgres:postgres" {
				t.Fatalf("%s: %s is owned by %s, want postgres:postgres", step, d, owner)
			}
		}
		return uuid
	}

	out, err = lab.run(script, false)
	if err != nil {
		t.Fatalf("first boot: %v\n%s", err, out)
	}
	first := check("first boot")
	if err := os.WriteFile(filepath.Join(data, "PG_VERSION"), []byte("16\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Again, as when the unit is restarted: nothing changes.
	out, err = lab.run(script, false)
	if err != nil || !strings.Contains(out, "holds an XFS file system; keeping it") || !strings.Contains(out, "is already mounted") {
		t.Fatalf("second run: %v\n%s", err, out)
	}
	if check("second run") != first {
		t.Fatal("the second run made a new file system")
	}

	// A reboot: unmounted, the disk intact. The same file system, by UUID.
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v\n%s", err, out)
	}
	out, err = lab.run(script, true)
	if err != nil || !strings.Contains(out, "+ mount -t xfs -o noatime,nofail UUID="+first+" "+mnt+"\n") || strings.Contains(out, "mkfs") {
		t.Fatalf("dry run after a reboot: %v\n%s", err, out)
	}
	if out, err = lab.run(script, false); err != nil {
		t.Fatalf("after a reboot: %v\n%s", err, out)
	}
	if check("after a reboot") != first {
		t.Fatal("a reboot made a new file system")
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err != nil {
		t.Fatalf("the data survived no reboot: %v", err)
	}

	// A stop/start: the instance store comes back blank.
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v\n%s", err, out)
	}
	if out, err := exec.Command("wipefs", "-a", dev).CombinedOutput(); err != nil {
		t.Fatalf("wipefs: %v\n%s", err, out)
	}
	if out, err = lab.run(script, false); err != nil || !strings.Contains(out, "is blank; making an XFS file system") {
		t.Fatalf("after a stop/start: %v\n%s", err, out)
	}
	if second := check("after a stop/start"); second == first {
		t.Fatal("the wiped disk kept its old UUID")
	}
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); !os.IsNotExist(err) {
		t.Fatalf("the data directory of the wiped disk is not empty: %v", err)
	}

	// Another file system: refused, nothing mounted.
	if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount: %v\n%s", err, out)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", dev).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	out, err = lab.run(script, false)
	if err == nil || !strings.Contains(out, "holds a ext4 file system, not XFS: refusing to format it") {
		t.Fatalf("an ext4 disk: %v\n%s", err, out)
	}
	if source, _, _, _ := lab.mounted(); source != "" {
		t.Fatalf("%s is mounted after a refusal", source)
	}

	// A file system mounted there already that is not the disk's: refused.
	if out, err := exec.Command("wipefs", "-a", dev).CombinedOutput(); err != nil {
		t.Fatalf("wipefs: %v\n%s", err, out)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	out, err = lab.run(script, false)
	if err == nil || !strings.Contains(out, "has another file system mounted") {
		t.Fatalf("a tmpfs on the mount point: %v\n%s", err, out)
	}
}

// TestEC2DiskScript_fourDisks checks the RAID0 path, which this kernel
// cannot run (no md): a dry run against four loop devices, with a stand-in
// mdadm that answers --examine, must create the array from the four disks
// (each once, sorted) when they are blank, assemble it when they carry it,
// and refuse a mix; and fewer disks than the instance type has is an error.
func TestEC2DiskScript_fourDisks(t *testing.T) {
	lab := newDiskLab(t)
	var devs []string
	for i := range 4 {
		devs = append(devs, lab.disk(i, 16<<20))
	}
	slices.Sort(devs)
	// mdadm --examine succeeds for the devices listed in $SUPERBLOCKS and
	// records every call.
	stub := "#!/bin/sh\necho \"mdadm $*\" >>\"$MDADM_LOG\"\n" +
		"[ \"$1\" = --examine ] || exit 0\ncase \" $SUPERBLOCKS \" in *\" $2 \"*) exit 0 ;; esac\nexit 1\n"
	if err := os.WriteFile(filepath.Join(lab.dir, "bin", "mdadm"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	script := lab.script(4)
	mnt := lab.mountPoint()
	log := filepath.Join(lab.dir, "mdadm.log")

	for _, tc := range []struct {
		name        string
		superblocks []string
		want        []string
		fail        string
	}{
		{"blank disks", nil, []string{
			"+ mdadm --create /dev/md/pgnvme --run --level=0 --raid-devices=4 --name=pgnvme --homehost=any " + strings.Join(devs, " "),
			"+ mkfs.xfs -K -L pgnvme -l su=8b /dev/md/pgnvme",
			"+ mkdir -p " + mnt,
			"+ mount -t xfs -o noatime,nofail UUID=<uuid of /dev/md/pgnvme> " + mnt,
			"+ install -d -m 0700 -o postgres -g postgres " + mnt,
			"+ install -d -m 0700 -o postgres -g postgres " + filepath.Join(mnt, "data") + " " + filepath.Join(mnt, "walg-prefetch"),
		}, ""},
		{"disks that carry the array", devs, []string{
			"+ mdadm --assemble /dev/md/pgnvme " + strings.Join(devs, " "),
		}, ""},
		{"a mix", devs[:3], nil, "3 of 4 disks carry an md superblock and 1 do not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(log)
			out, err := lab.run(script, true, "MDADM_LOG="+log, "SUPERBLOCKS="+strings.Join(tc.superblocks, " "))
			if tc.fail != "" {
				if err == nil || !strings.Contains(out, tc.fail) {
					t.Fatalf("want a failure with %q: %v\n%s", tc.fail, err, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var commands []string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "+ ") {
					commands = append(commands, l)
				}
			}
			if !slices.Equal(commands, tc.want) && (len(tc.want) != 1 || len(commands) == 0 || commands[0] != tc.want[0]) {
				t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(commands, "\n"), strings.Join(tc.want, "\n"))
			}
			examined, _ := os.ReadFile(log)
			for _, d := range devs {
				if strings.Count(string(examined), "mdadm --examine "+d+"\n") != 1 {
					t.Errorf("%s was not examined once:\n%s", d, examined)
				}
			}
		})
	}

	// One link gone: three disks where the instance type has four.
	if err := os.Remove(filepath.Join(lab.dir, "by-id", "nvme-Amazon_EC2_NVMe_Instance_Storage_AWSTEST0003")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(lab.dir, "by-id", "nvme-Amazon_EC2_NVMe_Instance_Storage_AWSTEST0003_1")); err != nil {
		t.Fatal(err)
	}
	out, err := lab.run(script, true, "MDADM_LOG="+log, "SUPERBLOCKS=")
	if err == nil || !strings.Contains(out, "found 3 instance-store disks") || !strings.Contains(out, "expected 4") {
		t.Fatalf("three of four disks: %v\n%s", err, out)
	}
}
