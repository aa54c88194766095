package catalog

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Filter selects instance types. The zero Filter selects every type offered
// in the region.
type Filter struct {
	// MinNVMeGiB and MaxNVMeGiB bound TotalGiB; 0 means unbounded.
	MinNVMeGiB, MaxNVMeGiB float64
	// MinVCPUs is the smallest acceptable vCPU count.
	MinVCPUs int
	// MinMemoryGiB is the smallest acceptable memory in GiB.
	MinMemoryGiB float64
	// Architectures keeps types supporting any of these (see [Architectures]);
	// empty means any.
	Architectures []string
	// Families is an allow-list of exact families, e.g. "m6id"; empty means all.
	Families []string
	// ExcludeFamilies are families never selected.
	ExcludeFamilies []string
	// OfferedInZoneIDs keeps types offered in every one of these zone IDs.
	OfferedInZoneIDs []string
	// MinZones keeps types offered in at least this many zones of the
	// region; 0 means no rule.
	MinZones int
	// ExcludeSpecialPurpose drops types for which
	// [InstanceType.SpecialPurpose] is true (accelerators, Macs), unless
	// their family is listed in Families.
	ExcludeSpecialPurpose bool
	// ExcludePreviousGeneration drops previous-generation types unless their
	// family is listed in Families.
	ExcludePreviousGeneration bool
	// RequireNVMe drops types whose instance storage is not NVMe
	// ([InstanceType.NVMe] false: x1, x1e), which pgnvme_cluster cannot run on.
	RequireNVMe bool
}

// Validate reports every problem with f, each as a sentence saying what to
// change, joined with errors.Join; nil when f is usable.
func (f Filter) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	for _, v := range []struct {
		name  string
		value float64
	}{
		{"minimum NVMe size (GiB)", f.MinNVMeGiB},
		{"maximum NVMe size (GiB)", f.MaxNVMeGiB},
		{"minimum memory (GiB)", f.MinMemoryGiB},
	} {
		switch {
		case math.IsNaN(v.value) || math.IsInf(v.value, 0):
			bad("The %s must be a finite number; set it to 0 or more.", v.name)
		case v.value < 0:
			bad("The %s is %g; set it to 0 or more (0 means no limit).", v.name, v.value)
		}
	}
	if f.MinNVMeGiB > 0 && f.MaxNVMeGiB > 0 && f.MinNVMeGiB > f.MaxNVMeGiB {
		bad("The minimum NVMe size (%g GiB) is larger than the maximum (%g GiB); lower the minimum or raise the maximum.", f.MinNVMeGiB, f.MaxNVMeGiB)
	}
	if f.MinVCPUs < 0 {
		bad("The minimum vCPU count is %d; set it to 0 or more.", f.MinVCPUs)
	}
	if f.MinZones < 0 {
		bad("The minimum zone count is %d; set it to 0 or more (0 means no rule).", f.MinZones)
	}

	for _, a := range dups(f.Architectures) {
		bad("Architecture %q is listed twice; list it once.", a)
	}
	for _, a := range f.Architectures {
		if !slices.Contains(Architectures, a) {
			bad("Architecture %q is not an EC2 architecture; use one of %s.", a, strings.Join(Architectures, ", "))
		}
	}

	checkFamilies := func(what string, list []string) {
		for _, fam := range dups(list) {
			bad("Family %q is listed twice in the %s; list it once.", fam, what)
		}
		for _, fam := range list {
			switch {
			case strings.TrimSpace(fam) == "":
				bad("The %s contain an empty family; remove it or name a family such as \"m6id\".", what)
			case strings.Contains(fam, "."):
				before, _, _ := strings.Cut(fam, ".")
				bad("%q in the %s is an instance type, not a family; use the part before the dot (%q).", fam, what, before)
			}
		}
	}
	checkFamilies("allowed families", f.Families)
	checkFamilies("excluded families", f.ExcludeFamilies)
	for _, fam := range f.Families {
		if slices.Contains(f.ExcludeFamilies, fam) {
			bad("Family %q is both allowed and excluded; remove it from one of the two lists.", fam)
		}
	}

	for _, z := range dups(f.OfferedInZoneIDs) {
		bad("Zone ID %q is listed twice; list it once.", z)
	}
	for _, z := range f.OfferedInZoneIDs {
		if strings.TrimSpace(z) == "" {
			bad("The zone IDs contain an empty value; remove it or give a zone ID such as \"use1-az6\".")
		}
	}
	return errors.Join(errs...)
}

// dups returns the values that occur more than once in list, each once, in
// order of their second occurrence.
func dups(list []string) []string {
	seen := make(map[string]int, len(list))
	var out []string
	for _, v := range list {
		seen[v]++
		if seen[v] == 2 {
			out = append(out, v)
		}
	}
	return out
}

// Offered is an instance type with the zones of one region where it is offered.
type Offered struct {
	InstanceType
	// ZoneIDs are the IDs of the region's known zones where the type is
	// offered, sorted.
	ZoneIDs []string
	// Zones are the matching zone names, in the same order as ZoneIDs.
	Zones []string
}

// Select returns the types that f keeps among those offered in region,
// ordered by TotalGiB, then VCPUs, then MemoryMiB, then Name (ascending).
// Only offerings in zones listed in region.Zones count; a type offered in
// none of them is not returned. Select does not validate f (see
// [Filter.Validate]) and its result shares no memory with its inputs.
func Select(types []InstanceType, region Region, f Filter) []Offered {
	out := []Offered{}
	for _, t := range types {
		if !f.keeps(t) {
			continue
		}
		ids := make([]string, 0, len(region.Offerings[t.Name]))
		for _, id := range region.Offerings[t.Name] {
			if _, known := region.ZoneByID(id); known && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 || len(ids) < f.MinZones {
			continue
		}
		if !containsAll(ids, f.OfferedInZoneIDs) {
			continue
		}
		slices.Sort(ids)
		names := make([]string, len(ids))
		for i, id := range ids {
			z, _ := region.ZoneByID(id)
			names[i] = z.Name
		}
		out = append(out, Offered{InstanceType: t.clone(), ZoneIDs: ids, Zones: names})
	}
	slices.SortFunc(out, func(a, b Offered) int {
		return cmp.Or(
			cmp.Compare(a.TotalGB, b.TotalGB), // same order as TotalGiB, without rounding
			cmp.Compare(a.VCPUs, b.VCPUs),
			cmp.Compare(a.MemoryMiB, b.MemoryMiB),
			strings.Compare(a.Name, b.Name),
		)
	})
	return out
}

// keeps applies the rules of f that need no offering data.
func (f Filter) keeps(t InstanceType) bool {
	gib := t.TotalGiB()
	switch {
	case f.MinNVMeGiB > 0 && gib < f.MinNVMeGiB,
		f.MaxNVMeGiB > 0 && gib > f.MaxNVMeGiB,
		t.VCPUs < f.MinVCPUs,
		t.MemoryGiB() < f.MinMemoryGiB:
		return false
	}
	if len(f.Architectures) > 0 && !slices.ContainsFunc(t.Architectures, func(a string) bool { return slices.Contains(f.Architectures, a) }) {
		return false
	}
	family := t.Family()
	if len(f.Families) > 0 && !slices.Contains(f.Families, family) {
		return false
	}
	if f.ExcludeSpecialPurpose && t.SpecialPurpose() && !slices.Contains(f.Families, family) {
		return false
	}
	if f.ExcludePreviousGeneration && t.PreviousGeneration && !slices.Contains(f.Families, family) {
		return false
	}
	if f.RequireNVMe && !t.NVMe() {
		return false
	}
	return !slices.Contains(f.ExcludeFamilies, family)
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// Binding names the filters of f that select no type in region on their own account: for each filter set,
// how many types f would select with that one filter lifted ("min_memory_gib: 12 types without it"), those
// that free at least one type, most freeing first. Empty when f selects a type, or when no single filter
// lifted frees one (several bind together). The names are pgnvme_capacity_plan's attributes.
func Binding(types []InstanceType, region Region, f Filter) []string {
	if len(Select(types, region, f)) > 0 {
		return nil
	}
	type lifted struct {
		name  string
		count int
	}
	var found []lifted
	try := func(name string, set bool, lift func(*Filter)) {
		if !set {
			return
		}
		g := f
		lift(&g)
		if n := len(Select(types, region, g)); n > 0 {
			found = append(found, lifted{name, n})
		}
	}
	try(fmt.Sprintf("min_vcpus = %d", f.MinVCPUs), f.MinVCPUs > 0, func(g *Filter) { g.MinVCPUs = 0 })
	try(fmt.Sprintf("min_memory_gib = %g", f.MinMemoryGiB), f.MinMemoryGiB > 0, func(g *Filter) { g.MinMemoryGiB = 0 })
	try(fmt.Sprintf("architectures = %v", f.Architectures), len(f.Architectures) > 0, func(g *Filter) { g.Architectures = nil })
	try(fmt.Sprintf("families = %v", f.Families), len(f.Families) > 0, func(g *Filter) { g.Families = nil })
	try(fmt.Sprintf("exclude_families = %v", f.ExcludeFamilies), len(f.ExcludeFamilies) > 0, func(g *Filter) { g.ExcludeFamilies = nil })
	try(fmt.Sprintf("the zones (%s)", strings.Join(f.OfferedInZoneIDs, ", ")), len(f.OfferedInZoneIDs) > 0, func(g *Filter) { g.OfferedInZoneIDs = nil })
	try(fmt.Sprintf("offered in %d zones (node_count)", f.MinZones), f.MinZones > 1, func(g *Filter) { g.MinZones = 0 })
	try("special-purpose types left out (include_special_purpose)", f.ExcludeSpecialPurpose, func(g *Filter) { g.ExcludeSpecialPurpose = false })
	try("previous generations left out (include_previous_generation)", f.ExcludePreviousGeneration, func(g *Filter) { g.ExcludePreviousGeneration = false })
	slices.SortStableFunc(found, func(a, b lifted) int { return cmp.Compare(b.count, a.count) })
	out := make([]string, len(found))
	for i, l := range found {
		unit := "types"
		if l.count == 1 {
			unit = "type"
		}
		out[i] = fmt.Sprintf("%s (%d %s without it)", l.name, l.count, unit)
	}
	return out
}
