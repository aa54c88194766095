package cluster

import "path/filepath"

// LocalHost is the loopback address every local member listens on.
const LocalHost = "127.0.0.1"

// LocalDeviceDataDir is a node's data directory inside the file system of its own device: PostgreSQL
// advises against using a mount point itself as the data directory.
const LocalDeviceDataDir = "data"

// AssignLocal gives each node of s (local platform) its identity on this machine: a node that already
// exists in prior (by name) keeps its port and data directory for life; a new one takes the lowest port
// from s.Local.PortBase not used by anyone and the data directory <data_dir>/<name>, or
// <data_dir>/<name>/data when its data lives on its own device (mounted at <data_dir>/<name>, see
// Limits). The members come back in s's priority order, with no role or state.
func AssignLocal(s Spec, prior []Member) []Member {
	root := filepath.Clean(s.Local.DataDir)
	used := map[int]bool{}
	have := map[string]Member{}
	for _, m := range prior {
		have[m.Name] = m
		used[m.Port] = true
	}
	next := s.Local.PortBase
	out := make([]Member, 0, len(s.Nodes))
	for _, n := range s.Nodes {
		mem := Member{Name: n.Name, Zone: n.Zone, Host: LocalHost, DataDir: filepath.Join(root, n.Name)}
		if s.Local.Limits.Device() {
			mem.DataDir = filepath.Join(root, n.Name, LocalDeviceDataDir)
		}
		if mem.Zone == "" {
			mem.Zone = DefaultZone
		}
		if old, ok := have[n.Name]; ok && old.Port > 0 {
			mem.Port = old.Port
			if old.DataDir != "" {
				mem.DataDir = old.DataDir
			}
		} else {
			for used[next] {
				next++
			}
			mem.Port = next
			used[next] = true
		}
		out = append(out, mem)
	}
	return out
}
