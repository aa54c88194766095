package provider_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/latencydisk"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/provider"
)

const limitsAddr = "pgnvme_cluster.lim"

// limitsConfig is a cluster with limits, given as "a = 1, b = 2" (a block takes one argument a line).
func limitsConfig(dir string, base int, limits string) string {
	return fmt.Sprintf(`
resource "pgnvme_cluster" "lim" {
  name        = "tf-acc-limits"
  node_count  = 2
  parameters  = { shared_buffers = "32MB" }
  local {
    data_dir  = %q
    port_base = %d
    limits {
      %s
    }
  }
}
`, dir, base, strings.ReplaceAll(limits, ", ", "\n      "))
}

// cgroupFile reads one file of a node's cgroup in a v1 controller.
func cgroupFile(controller, group, file string) (string, error) {
	b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", controller, group, file))
	return strings.TrimSpace(string(b)), err
}

// nodeLimits checks what the kernel enforces for each node: the memory limit, the read IOPS rule on the
// node's own device, and the postmaster inside the cgroup.
func nodeLimits(memoryMiB, readIOPS int64) resource.TestCheckFunc {
	return func(st *terraform.State) error {
		rs := st.RootModule().Resources[limitsAddr].Primary.Attributes
		for _, node := range []string{"node-1", "node-2"} {
			group, dev := rs["local.cgroups."+node], rs["local.block_devices."+node]
			if group == "" || !strings.HasPrefix(dev, "/dev/loop") {
				return fmt.Errorf("%s: cgroup %q, device %q in state", node, group, dev)
			}
			got, err := cgroupFile("memory", group, "memory.limit_in_bytes")
			if err != nil {
				return err
			}
			if got != strconv.FormatInt(memoryMiB<<20, 10) {
				return fmt.Errorf("%s: memory.limit_in_bytes = %q, want %d MiB", node, got, memoryMiB)
			}
			num, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "dev"))
			if err != nil {
				return err
			}
			want := fmt.Sprintf("%s %d", strings.TrimSpace(string(num)), readIOPS)
			if got, err = cgroupFile("blkio", group, "blkio.throttle.read_iops_device"); err != nil {
				return err
			}
			if got != want {
				return fmt.Errorf("%s: read_iops_device = %q, want %q", node, got, want)
			}
			pid, err := os.ReadFile(filepath.Join(rs["local.data_dirs."+node], "postmaster.pid"))
			if err != nil {
				return err
			}
			procs, err := cgroupFile("memory", group, "cgroup.procs")
			if err != nil {
				return err
			}
			if !strings.Contains("\n"+procs+"\n", "\n"+strings.SplitN(string(pid), "\n", 2)[0]+"\n") {
				return fmt.Errorf("%s: its postmaster is not in cgroup %s", node, group)
			}
		}
		return nil
	}
}

// limitsGone is the CheckDestroy: nothing of the cluster (data, manifest, ports), no cgroup of it, no disk
// image, no loop device on one.
func limitsGone(dir string, base int) resource.TestCheckFunc {
	return func(st *terraform.State) error {
		if err := localClusterGone(dir, base, 2)(st); err != nil {
			return err
		}
		for _, c := range []string{"memory", "blkio"} {
			entries, _ := os.ReadDir(filepath.Join("/sys/fs/cgroup", c, "pgnvme"))
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), "tf-acc-limits-") {
					return fmt.Errorf("cgroup %s/pgnvme/%s is left after destroy", c, e.Name())
				}
			}
		}
		images, _ := filepath.Glob(filepath.Join(dir, "*.img"))
		if len(images) > 0 {
			return fmt.Errorf("disk images left after destroy: %v", images)
		}
		files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
		for _, f := range files {
			if b, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(b), dir+"/") {
				return fmt.Errorf("loop device %s still holds %s", filepath.Base(filepath.Dir(filepath.Dir(f))), strings.TrimSpace(string(b)))
			}
		}
		return nil
	}
}

// local.limits: created with a cgroup and a disk per node, memory and IOPS changed in place (no restart),
// imported, a new disk size replacing the cluster, and destroy leaving no cgroup, loop device or image.
func TestAccCluster_limits(t *testing.T) {
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 2)
	var started string
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             limitsGone(dir, base),
		Steps: []resource.TestStep{
			{
				Config: limitsConfig(dir, base, "memory_mib = 256, read_iops = 500, write_mib_per_second = 50, disk_gib = 1"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(limitsAddr, tfjsonpath.New("local").AtMapKey("limits"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"memory_mib": knownvalue.Int64Exact(256), "read_iops": knownvalue.Int64Exact(500), "write_iops": knownvalue.Null(),
						"read_mib_per_second": knownvalue.Null(), "write_mib_per_second": knownvalue.Int64Exact(50), "disk_gib": knownvalue.Int64Exact(1),
						"read_latency_ms": knownvalue.Null(), "write_latency_ms": knownvalue.Null(), "flush_latency_ms": knownvalue.Null(),
					})),
					statecheck.ExpectKnownValue(limitsAddr, tfjsonpath.New("local").AtMapKey("data_dirs").AtMapKey("node-1"), knownvalue.StringExact(filepath.Join(dir, "node-1", "data"))),
					statecheck.ExpectKnownValue(limitsAddr, tfjsonpath.New("local").AtMapKey("cgroups").AtMapKey("node-2"), knownvalue.StringRegexp(regexp.MustCompile(`^pgnvme/tf-acc-limits-[0-9a-f]{8}/node-2$`))),
					statecheck.ExpectKnownValue(limitsAddr, tfjsonpath.New("local").AtMapKey("block_devices").AtMapKey("node-1"), knownvalue.StringRegexp(regexp.MustCompile(`^/dev/loop\d+$`))),
				},
				Check: resource.ComposeTestCheckFunc(nodeLimits(256, 500), func(*terraform.State) error {
					started = psqlAt(t, base, "SELECT pg_postmaster_start_time()")
					return nil
				}),
			},
			{
				Config: limitsConfig(dir, base, "memory_mib = 320, read_iops = 1000, write_mib_per_second = 50, disk_gib = 1"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(limitsAddr, plancheck.ResourceActionUpdate)},
				},
				Check: resource.ComposeTestCheckFunc(nodeLimits(320, 1000), func(*terraform.State) error {
					if got := psqlAt(t, base, "SELECT pg_postmaster_start_time()"); got != started {
						return fmt.Errorf("changing limits restarted the primary (%s -> %s); they change in place", started, got)
					}
					return nil
				}),
			},
			{
				ResourceName:      limitsAddr,
				ImportState:       true,
				ImportStateId:     "local:" + dir,
				ImportStateVerify: true,
				// The configuration sets parameters; the manifest gives them back, but node_count comes back as a node list.
				ImportStateVerifyIgnore: []string{"node_count", "node", "synchronous"},
			},
			{
				Config: limitsConfig(dir, base, "memory_mib = 320, read_iops = 1000, write_mib_per_second = 50, disk_gib = 2"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(limitsAddr, plancheck.ResourceActionDestroyBeforeCreate)},
				},
				Check: resource.ComposeTestCheckFunc(nodeLimits(320, 1000), func(st *terraform.State) error {
					dev := st.RootModule().Resources[limitsAddr].Primary.Attributes["local.block_devices.node-2"]
					b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "size"))
					if err != nil {
						return err
					}
					if sectors, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); sectors*512 != 2<<30 {
						return fmt.Errorf("node-2's device %s has %d bytes, want 2 GiB", dev, sectors*512)
					}
					return nil
				}),
			},
		},
	})
}

// Bad limits are refused at plan, each at its attribute; limits exist only under the local platform; and
// a machine without the cgroup controllers is refused at plan with what to do.
func TestAccCluster_limitsBadInputs(t *testing.T) {
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 1)
	c := func(top, limits string) string {
		return fmt.Sprintf("resource \"pgnvme_cluster\" \"x\" {\n  name = \"tf-acc\"\n  node_count = 1\n%s\n  local {\n    data_dir = %q\n    port_base = %d\n    limits {\n      %s\n    }\n  }\n}\n", top, dir, base, strings.ReplaceAll(limits, ", ", "\n      "))
	}
	runBadInputs(t, []badInput{
		{"negative memory", c("", "memory_mib = -1"), `(?s)Invalid Limit.*memory_mib is -1`},
		{"negative read iops", c("", "read_iops = -3000"), `(?s)Invalid Limit.*read_iops is -3000`},
		{"negative throughput", c("", "write_mib_per_second = -125"), `(?s)Invalid Limit.*write_mib_per_second`},
		{"negative disk", c("", "read_iops = 100, disk_gib = -2"), `(?s)Invalid Limit.*disk_gib`},
		{"negative read latency", c("", "read_latency_ms = -1"), `(?s)Invalid Latency.*read_latency_ms is -1; give a latency in milliseconds`},
		{"flush latency in microseconds", c("", "flush_latency_ms = 1500"), `(?s)Invalid Latency.*flush_latency_ms is 1500 ms.*the unit is milliseconds`},
		// Below pgnvme_tuning's smallest machine, the error does not send the user to it (it said memory_gib = 0.1465, which
		// pgnvme_tuning refuses).
		{"memory below the default shared_buffers", c("", "memory_mib = 150"), `(?s)Memory Limit Too Small.*at least 192,\s+or\s+lower\s+shared_buffers\s+by\s+hand\s+\(pgnvme_tuning\s+sizes\s+machines\s+of\s+0.5\s+GiB`},
		{"memory below shared_buffers", c(`parameters = { shared_buffers = "1GB" }`, "memory_mib = 1024"),
			`(?s)Memory Limit Too Small.*shared_buffers is 1024 MiB.*pgnvme_tuning\s+with\s+memory_gib\s+=\s+1\s+sizes\s+it`},
		{"iops outside the local platform", fmt.Sprintf("resource \"pgnvme_cluster\" \"x\" {\n  name = \"tf-acc\"\n  limits = { read_iops = 3000 }\n  local { data_dir = %q }\n}\n", dir),
			`(?s)Unsupported argument.*"limits" is not expected here`},
	})

	// No controllers: the platform looks for them in an empty directory.
	empty := t.TempDir()
	factories := map[string]func() (tfprotov6.ProviderServer, error){
		"pgnvme": providerserver.NewProtocol6WithError(provider.NewWithPlatforms("test", map[cluster.Platform]provider.ClusterPlatform{
			cluster.PlatformLocal: localcluster.NewPlatformWithOptions(localcluster.Options{CgroupRoot: empty}),
		})()),
	}
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: factories,
		Steps: []resource.TestStep{{
			Config:      c("", "memory_mib = 512, read_iops = 3000"),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)Limits Not Available Here.*no cgroup memory controller.*no cgroup blkio controller`),
		}},
	})
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("a refused plan created %s", dir)
	}
}

// latencyLayerOf checks that node-1's device is a loop device on its latency layer's file, served by a
// running layer with the given read latency, and returns the layer's PID.
func latencyLayerOf(st *terraform.State, dir string, readMS float64) (int, error) {
	dev := st.RootModule().Resources[limitsAddr].Primary.Attributes["local.block_devices.node-1"]
	image := filepath.Join(dir, "node-1.img")
	b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	if err != nil {
		return 0, fmt.Errorf("node-1's device %q: %w", dev, err)
	}
	if got, want := strings.TrimSpace(string(b)), latencydisk.File(image); got != want {
		return 0, fmt.Errorf("node-1's device %s is on %s, want the latency layer's %s", dev, got, want)
	}
	pid, ok := latencydisk.Running(image)
	if !ok {
		return 0, fmt.Errorf("no latency layer runs for %s", image)
	}
	cfg, err := os.ReadFile(latencydisk.PathsOf(image).Config)
	if err != nil {
		return 0, err
	}
	if want := fmt.Sprintf(`"read_ns":%d,`, int64(readMS*1e6)); !strings.Contains(string(cfg), want) {
		return 0, fmt.Errorf("the layer's configuration is %s, want %s", cfg, want)
	}
	return pid, nil
}

// local.limits latencies: a node's device served through its latency layer (a detached process that
// outlives the provider), the latency changed in place (same layer, same postmaster), removing it replaces
// the cluster, and destroy leaves no layer process, mount or file.
func TestAccCluster_limitsLatency(t *testing.T) {
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 2)
	var layerPID int
	var started string
	layerGone := func(st *terraform.State) error {
		if err := limitsGone(dir, base)(st); err != nil {
			return err
		}
		for _, node := range []string{"node-1", "node-2"} {
			p := latencydisk.PathsOf(filepath.Join(dir, node+".img"))
			if pid, ok := latencydisk.Running(filepath.Join(dir, node+".img")); ok {
				return fmt.Errorf("%s's latency layer (PID %d) still runs after destroy", node, pid)
			}
			for _, f := range []string{p.Dir, p.PID, p.Config, p.Log} {
				if _, err := os.Stat(f); err == nil {
					return fmt.Errorf("%s is left after destroy", f)
				}
			}
		}
		if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), dir) {
			return fmt.Errorf("something under %s is still mounted after destroy", dir)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             layerGone,
		Steps: []resource.TestStep{
			{
				Config: limitsConfig(dir, base, "disk_gib = 1, read_iops = 3000, read_latency_ms = 2, write_latency_ms = 0.5"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(limitsAddr, tfjsonpath.New("local").AtMapKey("limits").AtMapKey("read_latency_ms"), knownvalue.Float64Exact(2)),
					statecheck.ExpectKnownValue(limitsAddr, tfjsonpath.New("local").AtMapKey("limits").AtMapKey("flush_latency_ms"), knownvalue.Null()),
				},
				Check: func(st *terraform.State) error {
					var err error
					layerPID, err = latencyLayerOf(st, dir, 2)
					started = psqlAt(t, base, "SELECT pg_postmaster_start_time()")
					return err
				},
			},
			{
				Config: limitsConfig(dir, base, "disk_gib = 1, read_iops = 3000, read_latency_ms = 0.75, write_latency_ms = 0.5"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(limitsAddr, plancheck.ResourceActionUpdate)},
				},
				Check: func(st *terraform.State) error {
					pid, err := latencyLayerOf(st, dir, 0.75)
					if err != nil {
						return err
					}
					if pid != layerPID {
						return fmt.Errorf("changing the latency restarted the layer (PID %d -> %d); it changes in place", layerPID, pid)
					}
					if got := psqlAt(t, base, "SELECT pg_postmaster_start_time()"); got != started {
						return fmt.Errorf("changing the latency restarted the primary (%s -> %s)", started, got)
					}
					return nil
				},
			},
			{
				Config: limitsConfig(dir, base, "disk_gib = 1, read_iops = 3000"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(limitsAddr, plancheck.ResourceActionDestroyBeforeCreate)},
				},
				Check: func(st *terraform.State) error {
					image := filepath.Join(dir, "node-1.img")
					if pid, ok := latencydisk.Running(image); ok {
						return fmt.Errorf("the latency layer (PID %d) still runs with no latency set", pid)
					}
					dev := st.RootModule().Resources[limitsAddr].Primary.Attributes["local.block_devices.node-1"]
					b, err := os.ReadFile(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
					if err != nil {
						return fmt.Errorf("node-1's device %q: %w", dev, err)
					}
					if got := strings.TrimSpace(string(b)); got != image {
						return fmt.Errorf("node-1's device %s is on %s, want the image itself", dev, got)
					}
					return nil
				},
			},
		},
	})
}
