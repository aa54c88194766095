package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/localnode"
)

// Destroy stops the durability watcher and removes its files, then stops
// every member at once (immediate shutdown, SIGKILL when that
// fails) and removes its data directory, log, socket directory and
// pgBackRest directory, its cgroup and its own disk (limits), then the
// manifest and the cluster's TLS files, and the data directory root when that is left empty. What is already gone is success. The archive's
// repository is not touched: it is the user's.
func (m *Manager) Destroy(ctx context.Context, s Spec) error {
	var errs []error
	if err := m.stopWatcher(ctx, s, true); err != nil {
		errs = append(errs, err)
	}
	for _, mb := range s.Members {
		tflog.Info(ctx, "destroying node", map[string]any{"node": mb.Name, "data_dir": mb.DataDir})
		if err := m.engine.Destroy(ctx, Node(mb, localnode.RoleStandby)); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := os.RemoveAll(pgBackRestDir(mb)); err != nil {
			errs = append(errs, err)
		}
		if err := m.removeLimits(ctx, s, mb); err != nil {
			errs = append(errs, fmt.Errorf("node %s: removing its limits: %w", mb.Name, err))
		}
	}
	if root, err := DataDirRoot(s); err == nil {
		for _, f := range []string{ManifestPath(root), restoredPath(root)} {
			if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		if err := os.RemoveAll(TLSDir(root)); err != nil {
			errs = append(errs, err)
		}
		removeIfEmpty(root)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("destroying cluster %s: %w", s.Name, err)
	}
	return nil
}
