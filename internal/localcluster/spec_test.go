package localcluster_test

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localcluster"
)

func validSpec() localcluster.Spec {
	return localcluster.Spec{
		Name: "tf-acc-demo",
		Members: []localcluster.Member{
			{Name: "n1", Port: 55001, DataDir: "/var/lib/pgnvme/demo/n1"},
			{Name: "n2", Port: 55002, DataDir: "/var/lib/pgnvme/demo/n2"},
			{Name: "n3", Port: 55003, DataDir: "/var/lib/pgnvme/demo/n3"},
		},
		Synchronous: anyOne(bootstrap.DurabilityRequired),
	}
}

func TestDataDirRootAndManifest(t *testing.T) {
	t.Parallel()
	root, err := localcluster.DataDirRoot(validSpec())
	if err != nil || root != "/var/lib/pgnvme/demo" {
		t.Fatalf("DataDirRoot: %q, %v; want /var/lib/pgnvme/demo", root, err)
	}
	s := validSpec()
	s.Members[2].DataDir = "/var/lib/pgnvme/other/n3"
	if root, err := localcluster.DataDirRoot(s); err != nil || root != "/var/lib/pgnvme" {
		t.Fatalf("DataDirRoot of split members: %q, %v; want /var/lib/pgnvme", root, err)
	}
	if got := localcluster.ManifestPath("/var/lib/pgnvme/demo/"); got != "/var/lib/pgnvme/demo/pgnvme-cluster.json" {
		t.Errorf("ManifestPath: %q", got)
	}
	_, err = localcluster.ReadManifest(t.TempDir())
	if !errors.Is(err, localcluster.ErrNoManifest) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadManifest of an empty directory: %v; want ErrNoManifest and fs.ErrNotExist", err)
	}
}
