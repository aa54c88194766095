package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// manifestName is the manifest's file name in the data directory root.
const manifestName = "pgnvme-cluster.json"

// manifestVersion is the manifest format's version.
const manifestVersion = 1

// manifest is what Create writes next to the members' data directories.
type manifest struct {
	Version int  `json:"version"`
	Spec    Spec `json:"spec"`
}

// ManifestPath is the manifest of the cluster whose members' data
// directories are under dataDirRoot (the resource's local.data_dir, see
// DataDirRoot).
func ManifestPath(dataDirRoot string) string {
	return filepath.Join(filepath.Clean(dataDirRoot), manifestName)
}

// ErrNoManifest is wrapped by ReadManifest's error when there is no
// manifest: the directory holds no cluster that Create made.
var ErrNoManifest = errors.New("no cluster manifest")

// ReadManifest reads the Spec that Create wrote under dataDirRoot. A missing
// manifest is an error wrapping ErrNoManifest (and fs.ErrNotExist).
func ReadManifest(dataDirRoot string) (Spec, error) {
	path := ManifestPath(dataDirRoot)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Spec{}, fmt.Errorf("%w at %s: %w", ErrNoManifest, path, err)
	}
	if err != nil {
		return Spec{}, fmt.Errorf("reading the cluster manifest: %w", err)
	}
	var mf manifest
	if err := json.Unmarshal(b, &mf); err != nil {
		return Spec{}, fmt.Errorf("reading the cluster manifest %s: %w", path, err)
	}
	if mf.Version != manifestVersion {
		return Spec{}, fmt.Errorf("the cluster manifest %s has version %d; this provider reads version %d", path, mf.Version, manifestVersion)
	}
	if len(mf.Spec.Members) == 0 {
		return Spec{}, fmt.Errorf("the cluster manifest %s lists no members", path)
	}
	return mf.Spec, mf.Spec.setTLSFiles()
}

// writeManifest writes s's manifest (mode 0600: archive options may hold
// credentials), owned by root's caller; the server user never reads it.
func writeManifest(s Spec) error {
	root, err := DataDirRoot(s)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(manifest{Version: manifestVersion, Spec: s}, "", "  ")
	if err != nil {
		return err
	}
	path := ManifestPath(root)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing the cluster manifest: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(fmt.Errorf("writing the cluster manifest: %w", err), os.Remove(tmp))
	}
	return nil
}

// formerMembers are the members the manifest under s's root lists that s
// does not (by name), in the manifest's order; none when there is no
// readable manifest.
func formerMembers(s Spec) []Member {
	root, err := DataDirRoot(s)
	if err != nil {
		return nil
	}
	old, err := ReadManifest(root)
	if err != nil {
		return nil
	}
	var out []Member
	for _, mb := range old.Members {
		if _, ok := s.member(mb.Name); !ok {
			out = append(out, mb)
		}
	}
	return out
}

// forgetMember drops the member name from the manifest under s's root, once it is removed, so that the
// next observation no longer finds it among the former members; nothing when there is no manifest.
func forgetMember(s Spec, name string) error {
	root, err := DataDirRoot(s)
	if err != nil {
		return err
	}
	old, err := ReadManifest(root)
	if errors.Is(err, ErrNoManifest) {
		return nil
	}
	if err != nil {
		return err
	}
	old.Members = slices.DeleteFunc(old.Members, func(m Member) bool { return m.Name == name })
	if len(old.Members) == 0 {
		return nil
	}
	return writeManifest(old)
}
