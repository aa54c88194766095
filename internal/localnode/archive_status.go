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
	entries, err := os.ReadDir(filepath.Join(n.dataDir(), "pg_wal", "archive_status"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the archive status of %s: %w", n.Name, err)
	}
	out := make([]string, 0, len(entries))
	for _, en := range entries {
		out = append(out, en.Name())
	}
	return out, nil
}

// MarkReady marks each of segments (WAL segment file names) ready for n's archiver: its .done status
// file renamed to .ready, so that the archiver pushes it and the checkpointer keeps it until then. A
// segment whose .done file is gone (recycled meanwhile) is skipped.
func (e *Engine) MarkReady(n Node, segments []string) error {
	dir := filepath.Join(n.dataDir(), "pg_wal", "archive_status")
	var errs []error
	for _, seg := range segments {
		err := os.Rename(filepath.Join(dir, seg+".done"), filepath.Join(dir, seg+".ready"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("marking the WAL of %s ready for its archiver: %w", n.Name, err)
	}
	return nil
}
