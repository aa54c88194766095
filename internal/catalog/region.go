package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// Zone is one availability zone of a region: its account-specific name and
// its ID, which names the same physical zone in every account.
type Zone struct {
	Name string `json:"name"` // "us-east-1a"
	ID   string `json:"id"`   // "use1-az6"
}

// Region holds a region's availability zones and where each catalog
// instance type is offered.
type Region struct {
	Name string `json:"name"`
	// Zones are the region's availability zones, sorted by ID.
	Zones []Zone `json:"zones"`
	// Offerings maps an instance type name to the sorted IDs of the zones
	// where it is offered.
	Offerings map[string][]string `json:"offerings"`
}

// ZoneByName returns the zone called name.
func (r Region) ZoneByName(name string) (Zone, bool) {
	for _, z := range r.Zones {
		if z.Name == name {
			return z, true
		}
	}
	return Zone{}, false
}

// ZoneByID returns the zone whose ID is id.
func (r Region) ZoneByID(id string) (Zone, bool) {
	for _, z := range r.Zones {
		if z.ID == id {
			return z, true
		}
	}
	return Zone{}, false
}

// ResolveZones turns zone names and zone IDs into zone IDs: first the names,
// then the IDs, each in input order. An unknown name or ID is an error that
// names it and lists the region's valid names and IDs; so is a zone given
// twice, including a name together with its own ID. Empty input gives an
// empty result.
func (r Region) ResolveZones(names, ids []string) ([]string, error) {
	out := make([]string, 0, len(names)+len(ids))
	seen := make(map[string]string, len(names)+len(ids)) // zone ID -> how it was given
	add := func(z Zone, given string) error {
		if prev, dup := seen[z.ID]; dup {
			if prev == given {
				return fmt.Errorf("availability zone %s is listed twice in %s; list each zone once", given, r.Name)
			}
			return fmt.Errorf("availability zones %s and %s are the same zone (%s, ID %s) in %s; list each zone once", prev, given, z.Name, z.ID, r.Name)
		}
		seen[z.ID] = given
		out = append(out, z.ID)
		return nil
	}
	for _, n := range names {
		z, ok := r.ZoneByName(n)
		if !ok {
			return nil, r.unknownZone("name", n)
		}
		if err := add(z, fmt.Sprintf("%q", n)); err != nil {
			return nil, err
		}
	}
	for _, id := range ids {
		z, ok := r.ZoneByID(id)
		if !ok {
			return nil, r.unknownZone("ID", id)
		}
		if err := add(z, fmt.Sprintf("%q", id)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// unknownZone is the error for a zone name or ID (kind) the region does not have.
func (r Region) unknownZone(kind, value string) error {
	if len(r.Zones) == 0 {
		return fmt.Errorf("unknown availability zone %s %q: no zones are known in region %s", kind, value, r.Name)
	}
	names := make([]string, len(r.Zones))
	ids := make([]string, len(r.Zones))
	for i, z := range r.Zones {
		names[i], ids[i] = z.Name, z.ID
	}
	slices.Sort(names)
	slices.Sort(ids)
	return fmt.Errorf("unknown availability zone %s %q in %s; valid zone names are %s and valid zone IDs are %s",
		kind, value, r.Name, strings.Join(names, ", "), strings.Join(ids, ", "))
}
