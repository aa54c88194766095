package localcluster

import "path/filepath"

// AssignMembers gives each node name (in priority order) its identity: a member that already exists
// (by name in existing) keeps its port and data directory for life; a new one takes the lowest port from
// portBase not used by anyone and the data directory root/<name>. Zones come from zones, "local" when
// absent.
func AssignMembers(names []string, zones map[string]string, existing []Member, root string, portBase int) []Member {
	used := map[int]bool{}
	have := map[string]Member{}
	for _, m := range existing {
		have[m.Name] = m
		used[m.Port] = true
	}
	next := portBase
	out := make([]Member, 0, len(names))
	for _, name := range names {
		zone := zones[name]
		if zone == "" {
			zone = "local"
		}
		mem := Member{Name: name, Zone: zone, DataDir: filepath.Join(root, name)}
		if old, ok := have[name]; ok {
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
