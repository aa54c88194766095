package nodesim

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// enable links name into the .wants (and .requires) directories its [Install] section names, and returns
// what it did, as systemctl enable prints it.
func (m *manager) enable(name string) (string, error) {
	m.mu.Lock()
	u := m.unitLocked(name)
	m.loadLocked(u)
	f := u.file
	m.mu.Unlock()
	if f == nil {
		return "", fmt.Errorf("failed to enable unit: %s", u.detail)
	}
	var out strings.Builder
	src := ""
	for _, dir := range unitDirs {
		if _, err := os.Stat(m.n.hostPath(path.Join(dir, name))); err == nil {
			src = path.Join(dir, name)
			break
		}
	}
	for _, kind := range []string{"WantedBy", "RequiredBy"} {
		suffix := map[string]string{"WantedBy": ".wants", "RequiredBy": ".requires"}[kind]
		for _, target := range f.list("Install", kind) {
			link := path.Join("/etc/systemd/system", target+suffix, name)
			if t, err := os.Readlink(m.n.hostPath(link)); err == nil && t == src {
				continue
			}
			if err := os.MkdirAll(m.n.hostPath(path.Dir(link)), 0o755); err != nil {
				return out.String(), err
			}
			_ = os.Remove(m.n.hostPath(link))
			if err := os.Symlink(src, m.n.hostPath(link)); err != nil {
				return out.String(), err
			}
			fmt.Fprintf(&out, "Created symlink %s → %s.\n", link, src)
		}
	}
	if len(f.list("Install", "WantedBy"))+len(f.list("Install", "RequiredBy")) == 0 {
		fmt.Fprintf(&out, "The unit files have no installation config (WantedBy=, RequiredBy=, ...) for %s.\n", name)
	}
	m.logf("enabled %s", name)
	return out.String(), nil
}

// disable removes name's links from every .wants and .requires directory.
func (m *manager) disable(name string) string {
	var out strings.Builder
	matches, _ := filepath.Glob(m.n.hostPath("/etc/systemd/system/*.wants/" + name))
	more, _ := filepath.Glob(m.n.hostPath("/etc/systemd/system/*.requires/" + name))
	for _, p := range append(matches, more...) {
		if err := os.Remove(p); err == nil {
			fmt.Fprintf(&out, "Removed %s.\n", strings.TrimPrefix(p, m.n.hostPath("")))
		}
	}
	return out.String()
}

// mask links name to /dev/null in /etc/systemd/system.
func (m *manager) mask(name string) (string, error) {
	link := path.Join("/etc/systemd/system", name)
	p := m.n.hostPath(link)
	if t, err := os.Readlink(p); err == nil && t == "/dev/null" {
		return "", nil
	}
	if _, err := os.Lstat(p); err == nil {
		return "", fmt.Errorf("failed to mask unit: file %s already exists", link)
	}
	if err := os.Symlink("/dev/null", p); err != nil {
		return "", err
	}
	m.mu.Lock()
	m.loadLocked(m.unitLocked(name))
	m.mu.Unlock()
	return fmt.Sprintf("Created symlink %s → /dev/null.\n", link), nil
}

// unmask removes name's link to /dev/null.
func (m *manager) unmask(name string) string {
	link := path.Join("/etc/systemd/system", name)
	if t, err := os.Readlink(m.n.hostPath(link)); err == nil && t == "/dev/null" {
		_ = os.Remove(m.n.hostPath(link))
		m.mu.Lock()
		m.loadLocked(m.unitLocked(name))
		m.mu.Unlock()
		return "Removed " + link + ".\n"
	}
	return ""
}

// enabledState is what systemctl is-enabled prints.
func (m *manager) enabledState(name string) string {
	if t, err := os.Readlink(m.n.hostPath("/etc/systemd/system/" + name)); err == nil && t == "/dev/null" {
		return "masked"
	}
	for _, kind := range []string{"wants", "requires"} {
		if ms, _ := filepath.Glob(m.n.hostPath("/etc/systemd/system/*." + kind + "/" + name)); len(ms) > 0 {
			return "enabled"
		}
	}
	m.mu.Lock()
	u := m.unitLocked(name)
	m.mu.Unlock()
	switch {
	case u.file == nil:
		return "not-found"
	case len(u.file.list("Install", "WantedBy"))+len(u.file.list("Install", "RequiredBy")) == 0:
		return "static"
	}
	return "disabled"
}
