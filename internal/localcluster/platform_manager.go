package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// managerKey is what a Manager is chosen by: the server user and the major (0: the newest installed).
type managerKey struct {
	user  string
	major int
}

// manager is the Manager for s's server user and major: postgres_major when s names one (the state
// records the major chosen at create, so an existing cluster always does), else the major its manifest
// or data directories record, else the newest installed.
func (p *Platform) manager(s cluster.Spec) (*Manager, error) {
	key := managerKey{major: s.PostgresMajor}
	if b := localspec.Of(s); b != nil {
		key.user = b.RunAsUser
		if key.major == 0 {
			key.major = recordedMajor(b.DataDir)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if m, ok := p.managers[key]; ok {
		return m, nil
	}
	m, err := NewManagerWithOptions(Options{RunAsUser: key.user, CgroupRoot: p.cgroupRoot, Major: key.major})
	var missing *localnode.MajorNotInstalledError
	switch {
	case errors.As(err, &missing) && s.PostgresMajor != 0:
		return nil, &cluster.FieldError{Path: []string{"postgres_major"}, Summary: "PostgreSQL Version Not Installed",
			Detail: fmt.Sprintf("postgres_major is %d, and the local platform runs each cluster on its own major's binaries. %s, "+
				"or set postgres_major to an installed major.", s.PostgresMajor, missing.Error())}
	case errors.As(err, &missing):
		return nil, &cluster.FieldError{Path: []string{"local", "data_dir"}, Summary: "PostgreSQL Version Not Installed",
			Detail: fmt.Sprintf("The cluster under local.data_dir was created with PostgreSQL %d, and its data can only run on that major. %s.",
				missing.Major, missing.Error())}
	case err != nil:
		return nil, &cluster.FieldError{Path: []string{"local"}, Summary: "PostgreSQL Not Available",
			Detail: "The local platform runs the installed PostgreSQL binaries, and none could be used. Install them " +
				"(Debian: apt-get install postgresql-15) or set local.run_as_user to a user that can run them. " + err.Error()}
	}
	p.managers[key] = m
	return m, nil
}

// recordedMajor is the PostgreSQL major of the cluster under dataDir as this machine records it: its
// manifest's, else the first member data directory's PG_VERSION; 0 when neither says (no cluster there).
func recordedMajor(dataDir string) int {
	if dataDir == "" {
		return 0
	}
	ls, err := ReadManifest(dataDir)
	if err != nil {
		return 0
	}
	if ls.Major != 0 {
		return ls.Major
	}
	for _, mb := range ls.Members {
		if b, err := os.ReadFile(filepath.Join(mb.DataDir, "PG_VERSION")); err == nil {
			if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return v
			}
		}
	}
	return 0
}
