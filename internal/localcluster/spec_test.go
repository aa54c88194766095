package localcluster_test

import (
	"errors"
	"io/fs"
	"strings"
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

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*localcluster.Spec)
		want   string // "" = valid
	}{
		{"valid", func(*localcluster.Spec) {}, ""},
		{"preferred number above standbys", func(s *localcluster.Spec) {
			s.Synchronous.Number, s.Synchronous.DataDurability = 3, bootstrap.DurabilityPreferred
		}, ""},
		{"duplicate name", func(s *localcluster.Spec) { s.Members[2].Name = "n1" }, "node name n1 is used twice"},
		{"duplicate port", func(s *localcluster.Spec) { s.Members[1].Port = 55001 }, "both use port 55001"},
		{"duplicate data dir", func(s *localcluster.Spec) { s.Members[1].DataDir = s.Members[0].DataDir + "/" }, "both use data directory"},
		{"relative data dir", func(s *localcluster.Spec) { s.Members[0].DataDir = "n1" }, "absolute path"},
		{"number too high for required", func(s *localcluster.Spec) { s.Synchronous.Number = 3 }, "more than the cluster's 2 standbys"},
		{"reserved parameter", func(s *localcluster.Spec) { s.Parameters = map[string]string{"port": "1"} }, `"port" is set by the platform`},
		{"walg", func(s *localcluster.Spec) {
			s.Archive = &bootstrap.Archive{WALGEnv: map[string]string{"WALG_S3_PREFIX": "s3://b/p"}}
		}, "archives with pgBackRest"},
		{"archive without options", func(s *localcluster.Spec) { s.Archive = &bootstrap.Archive{} }, "neither pgBackRest options nor a WAL-G environment"},
		{"no members", func(s *localcluster.Spec) { s.Members = nil }, "has no members"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := validSpec()
			tt.change(&s)
			err := localcluster.Validate(s)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate: %v, want an error containing %q", err, tt.want)
			}
		})
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
