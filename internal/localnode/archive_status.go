package localnode

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ArchiveStatus are the file names in n's pg_wal/archive_status (none when it has no such directory).
func (e *Engine) ArchiveStatus(n Node) ([]string, error) {
	return dirNames(filepath.Join(n.dataDir(), "pg_wal", "archive_status"), "the archive status of "+n.Name)
}

// WALFiles lists the names in n's pg_wal (segments, history files, partial segments, archive_status):
// none when it has no data directory.
func (e *Engine) WALFiles(n Node) ([]string, error) {
	return dirNames(filepath.Join(n.dataDir(), "pg_wal"), "the WAL directory of "+n.Name)
}

// dirNames are the names in directory dir (none when it does not exist); what names it in errors.
func dirNames(dir, what string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	out := make([]string, 0, len(entries))
	for _, en := range entries {
		out = append(out, en.Name())
	}
	return out, nil
}

// MarkReady marks each of segments (WAL segment file names) ready for n's archiver, so that the archiver
// pushes it and the checkpointer keeps it until then: its .done status file renamed to .ready, or, for a
// segment with no status file, a new .ready file (owned by the run user). A segment whose file is gone
// (recycled meanwhile) is skipped.
func (e *Engine) MarkReady(n Node, segments []string) error {
	dir := filepath.Join(n.dataDir(), "pg_wal", "archive_status")
	var errs []error
	for _, seg := range segments {
		err := os.Rename(filepath.Join(dir, seg+".done"), filepath.Join(dir, seg+".ready"))
		if errors.Is(err, fs.ErrNotExist) {
			err = e.markUnmarkedReady(n, seg)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("marking the WAL of %s ready for its archiver: %w", n.Name, err)
	}
	return nil
}

// markUnmarkedReady writes seg's .ready status file when seg is in n's pg_wal and has no status file.
func (e *Engine) markUnmarkedReady(n Node, seg string) error {
	wal := filepath.Join(n.dataDir(), "pg_wal")
	if _, err := os.Stat(filepath.Join(wal, seg)); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	ready := filepath.Join(wal, "archive_status", seg+".ready")
	if _, err := os.Stat(ready); err == nil {
		return nil
	}
	return e.writeFile(ready, nil, 0o600)
}
