package provider_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/wait"
)

// localSpec is clusterConfig's cluster as the platform sees it.
func localSpec(dir string, base int) cluster.Spec {
	return cluster.FromInput(cluster.Input{Name: "tf-acc", Nodes: []cluster.Node{{Name: "node-1", Zone: "zone-a"}, {Name: "node-2", Zone: "zone-b"}, {Name: "node-3", Zone: "zone-c"}},
		Blocks: []cluster.BlockInput{&localspec.Block{DataDir: dir, PortBase: base}}})
}

// The cluster is destroyed behind Terraform's back: the refresh removes it from state and the next plan
// creates it again.
func TestAccCluster_disappears(t *testing.T) {
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 3)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             localClusterGone(dir, base, 3),
		Steps: []resource.TestStep{{
			Config: clusterConfig(dir, base, ""),
			Check: func(*terraform.State) error {
				return localcluster.NewPlatform().Delete(context.Background(), localSpec(dir, base), cluster.Prior{})
			},
			ExpectNonEmptyPlan: true,
		}},
	})
}

// terraform apply killed (SIGKILL, with its provider) while it creates a cluster leaves the primary
// running, the manifest and partial standbys, and no state. The next apply of the same configuration
// resumes that create instead of refusing, and ends with both standbys in the quorum.
func TestAccCluster_interruptedCreate(t *testing.T) {
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 3)
	bin := acctest.ProviderBinary(t)
	work := t.TempDir()
	config := "terraform {\n  required_providers {\n    pgnvme = { source = \"pgnvme/pgnvme\" }\n  }\n}\n" + clusterConfig(dir, base, "")
	if err := os.WriteFile(filepath.Join(work, "main.tf"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Getenv("TF_ACC_TERRAFORM_PATH"), "apply", "-auto-approve", "-input=false", "-no-color")
	if cmd.Path == "" {
		cmd = exec.Command("terraform", "apply", "-auto-approve", "-input=false", "-no-color")
	}
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+acctest.TerraformCLIConfig(t, bin))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // Terraform and its provider in one group, killed together
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Kill the moment the primary accepts connections: the standbys are being copied.
	err := wait.Until(context.Background(), "the primary to listen", 2*time.Minute, 20*time.Millisecond, nil, func(context.Context) (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("terraform apply ended before the primary listened: %w", err)
		default:
		}
		c, dialErr := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", base), 100*time.Millisecond)
		if dialErr == nil {
			c.Close()
		}
		return dialErr == nil, nil
	})
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if werr := <-done; werr == nil {
		t.Log("terraform apply finished before it could be killed: the resume below has nothing left to do")
	}
	// Whatever the outcome, nothing of the cluster may outlive the test.
	t.Cleanup(func() {
		_ = localcluster.NewPlatform().Delete(context.Background(), localSpec(dir, base), cluster.Prior{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(work, "terraform.tfstate")); err == nil {
		t.Log("the killed apply wrote a state file; the resumed apply below runs without it")
	}
	if _, err := os.Stat(localcluster.ManifestPath(dir)); err != nil {
		t.Fatalf("the killed apply should leave the manifest behind: %v", err)
	}

	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: acctest.ProtoV6ProviderFactories(),
		CheckDestroy:             localClusterGone(dir, base, 3),
		Steps: []resource.TestStep{{
			Config: clusterConfig(dir, base, ""),
			Check: func(*terraform.State) error {
				if got := psqlAt(t, base, "SELECT application_name || '|' || sync_state FROM pg_stat_replication ORDER BY 1"); got != "node-2|quorum\nnode-3|quorum" {
					return fmt.Errorf("after the resumed create: %q, want both standbys in quorum", got)
				}
				return nil
			},
		}},
	})
}

// A different cluster under the same data directory is still refused.
func TestAccCluster_foreignManifestRefused(t *testing.T) {
	dir := clusterDir(t)
	base := acctest.FreePortBase(t, 3)
	p := localcluster.NewPlatform()
	other := localSpec(dir, base)
	other.Name, other.Nodes = "someone-else", other.Nodes[:1]
	other.Synchronous.Number = 0
	if _, err := p.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Delete(context.Background(), other, cluster.Prior{}) })
	runBadInputs(t, []badInput{{"another cluster's manifest", clusterConfig(dir, base+10, ""), `(?s)Cannot Create Cluster Here.*manifest already exists`}})
}
