package capacity

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

// Defaults and constants of the sizing model. [Request] takes every field
// literally; callers fill these in when the user leaves a field unset.
const (
	// DefaultHorizonMonths is how many months of growth the disk holds.
	DefaultHorizonMonths = 12
	// DefaultBloatFactor allows for dead tuples and free space in tables
	// and indexes.
	DefaultBloatFactor = 1.2
	// DefaultMaxDiskUtilization is the highest share of the disk the
	// bloated dataset plus the WAL reserve may fill at the horizon.
	DefaultMaxDiskUtilization = 0.75
	// DefaultNodeCount is a primary and two standbys.
	DefaultNodeCount = 3
	// DeriveWALReserve (any negative WALReserveGiB) asks Size to derive
	// the WAL reserve: max(MinDerivedWALReserveGiB,
	// DerivedWALReserveFraction x bloated dataset).
	DeriveWALReserve = -1.0
	// MinDerivedWALReserveGiB is the floor of a derived WAL reserve.
	MinDerivedWALReserveGiB = 16.0
	// DerivedWALReserveFraction is the share of the bloated dataset a
	// derived WAL reserve keeps. Tune sets max_wal_size to 5% of the disk;
	// a disk sized by Size is about 1.5 x the bloated dataset, so 10% of
	// the bloated dataset holds max_wal_size with room for temporary files.
	DerivedWALReserveFraction = 0.10
	// MaxBloatFactor bounds Request.BloatFactor.
	MaxBloatFactor = 10.0
)

// Request is what the cluster must hold. Every field is taken literally;
// see the Default* constants for the values callers use when the user sets
// none.
type Request struct {
	// DatasetGiB is the current size of tables and indexes (heap, TOAST and
	// indexes, as pg_database_size minus pg_wal), in GiB; greater than 0.
	DatasetGiB float64
	// GrowthGiBPerMonth is the growth of the dataset per month in GiB; at least 0.
	GrowthGiBPerMonth float64
	// HorizonMonths is how many months of growth the disk must hold; at least 0.
	HorizonMonths int
	// BloatFactor multiplies the projected dataset for dead tuples and free
	// space; 1 to 10.
	BloatFactor float64
	// WALReserveGiB is the disk kept for pg_wal and temporary files in GiB;
	// negative (DeriveWALReserve) derives it, see DeriveWALReserve.
	WALReserveGiB float64
	// MaxDiskUtilization is the highest share of the disk the bloated
	// dataset plus the WAL reserve may fill at the horizon, in (0, 1].
	MaxDiskUtilization float64
	// WorkingSetGiB is the data that should stay in memory, in GiB; 0 means
	// the projected dataset (the whole dataset at the horizon, without
	// bloat).
	WorkingSetGiB float64
	// NodeCount is the number of nodes; each holds a full copy, so it does
	// not change the per-node requirement (only Sizing.ClusterNVMeGiB).
	// At least 1.
	NodeCount int
}

// NewRequest returns a Request for datasetGiB with every other field at its
// default: no growth, 12 months, bloat 1.2, derived WAL reserve, 75%
// utilisation, working set = projected dataset, 3 nodes.
func NewRequest(datasetGiB float64) Request {
	return Request{
		DatasetGiB:         datasetGiB,
		HorizonMonths:      DefaultHorizonMonths,
		BloatFactor:        DefaultBloatFactor,
		WALReserveGiB:      DeriveWALReserve,
		MaxDiskUtilization: DefaultMaxDiskUtilization,
		NodeCount:          DefaultNodeCount,
	}
}

// Validate reports every problem with r, each as a sentence saying what to
// change, joined with errors.Join; nil when r is usable.
func (r Request) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	for _, v := range []float64{r.DatasetGiB, r.GrowthGiBPerMonth, r.BloatFactor, r.WALReserveGiB, r.MaxDiskUtilization, r.WorkingSetGiB} {
		if !finite(v) {
			bad("Every size and ratio must be a finite number; replace NaN or infinite values.")
			break
		}
	}
	if finite(r.DatasetGiB) && r.DatasetGiB <= 0 {
		bad("The dataset is %g GiB; set it to the current size of tables and indexes in GiB, greater than 0.", r.DatasetGiB)
	}
	if r.GrowthGiBPerMonth < 0 {
		bad("The growth is %g GiB per month; set it to 0 or more.", r.GrowthGiBPerMonth)
	}
	if r.HorizonMonths < 0 {
		bad("The horizon is %d months; set it to 0 or more (default %d).", r.HorizonMonths, DefaultHorizonMonths)
	}
	if finite(r.BloatFactor) && (r.BloatFactor < 1 || r.BloatFactor > MaxBloatFactor) {
		bad("The bloat factor is %g; set it to 1 (no bloat) to %g (default %g).", r.BloatFactor, MaxBloatFactor, DefaultBloatFactor)
	}
	if finite(r.MaxDiskUtilization) && (r.MaxDiskUtilization <= 0 || r.MaxDiskUtilization > 1) {
		bad("The maximum disk utilisation is %g; set it above 0 and at most 1 (default %g).", r.MaxDiskUtilization, DefaultMaxDiskUtilization)
	}
	if r.WorkingSetGiB < 0 {
		bad("The working set is %g GiB; set it above 0, or to 0 to use the projected dataset.", r.WorkingSetGiB)
	}
	if r.NodeCount < 1 {
		bad("The node count is %d; set it to 1 or more (default %d).", r.NodeCount, DefaultNodeCount)
	}
	return errors.Join(errs...)
}

// Sizing is the disk each node needs, and how it was derived.
//
//	ProjectedDatasetGiB = DatasetGiB + GrowthGiBPerMonth x HorizonMonths
//	BloatedGiB          = ProjectedDatasetGiB x BloatFactor
//	WALReserveGiB       = as given, or max(16, 10% x BloatedGiB)
//	RequiredNVMeGiB     = (BloatedGiB + WALReserveGiB) / MaxDiskUtilization
//	WorkingSetGiB       = as given, or ProjectedDatasetGiB
//	ClusterNVMeGiB      = RequiredNVMeGiB x NodeCount
type Sizing struct {
	// ProjectedDatasetGiB is the dataset at the horizon.
	ProjectedDatasetGiB float64
	// BloatedGiB is the projected dataset with bloat.
	BloatedGiB float64
	// WALReserveGiB is the WAL reserve, as given or derived.
	WALReserveGiB float64
	// RequiredNVMeGiB is the NVMe each node needs.
	RequiredNVMeGiB float64
	// WorkingSetGiB is the working set, as given or the projected dataset.
	WorkingSetGiB float64

	// HorizonMonths, BloatFactor, MaxDiskUtilization and NodeCount repeat
	// the request, for messages.
	HorizonMonths      int
	BloatFactor        float64
	MaxDiskUtilization float64
	NodeCount          int
	// ClusterNVMeGiB is RequiredNVMeGiB x NodeCount (each node holds a full copy).
	ClusterNVMeGiB float64
}

// Size applies the sizing formula (see [Sizing]) to r. It does not validate
// r: call [Request.Validate] first.
func Size(r Request) Sizing {
	projected := r.DatasetGiB + r.GrowthGiBPerMonth*float64(r.HorizonMonths)
	bloated := projected * r.BloatFactor
	wal := r.WALReserveGiB
	if wal < 0 {
		wal = max(MinDerivedWALReserveGiB, DerivedWALReserveFraction*bloated)
	}
	required := (bloated + wal) / r.MaxDiskUtilization
	ws := r.WorkingSetGiB
	if ws == 0 {
		ws = projected
	}
	return Sizing{
		ProjectedDatasetGiB: projected,
		BloatedGiB:          bloated,
		WALReserveGiB:       wal,
		RequiredNVMeGiB:     required,
		WorkingSetGiB:       ws,
		HorizonMonths:       r.HorizonMonths,
		BloatFactor:         r.BloatFactor,
		MaxDiskUtilization:  r.MaxDiskUtilization,
		NodeCount:           r.NodeCount,
		ClusterNVMeGiB:      required * float64(r.NodeCount),
	}
}

// Candidate is an offered instance type measured against a Sizing.
type Candidate struct {
	catalog.Offered
	// DiskUtilization is (BloatedGiB + WALReserveGiB) / TotalGiB: the share
	// of the NVMe filled at the horizon (+Inf for a type without storage).
	DiskUtilization float64
	// MemoryToWorkingSet is MemoryGiB / WorkingSetGiB: at 1 or more the
	// working set fits in RAM.
	MemoryToWorkingSet float64
	// Fits reports TotalGiB >= RequiredNVMeGiB, that is DiskUtilization <=
	// MaxDiskUtilization.
	Fits bool
}

// Evaluate measures o against s. The Candidate shares o's slices.
func Evaluate(s Sizing, o catalog.Offered) Candidate {
	return Candidate{
		Offered:            o,
		DiskUtilization:    ratio(s.BloatedGiB+s.WALReserveGiB, o.TotalGiB()),
		MemoryToWorkingSet: ratio(o.MemoryGiB(), s.WorkingSetGiB),
		Fits:               o.TotalGiB() >= s.RequiredNVMeGiB,
	}
}

// DefaultMinVCPUs is the fewest vCPUs a capacity plan considers unless asked for fewer: a database server
// needs a core for its queries and one for everything else (autovacuum, the WAL writer and archiver,
// replication, checkpoints).
const DefaultMinVCPUs = 2

// Reason says which rule picked the recommendation: the smallest of the candidates in the ranking order, at
// the required NVMe, with the vCPU floor minVCPUs (and whether it is the default).
func (p Plan) Reason(minVCPUs int, defaulted bool) string {
	unit := "vCPUs"
	if minVCPUs == 1 {
		unit = "vCPU"
	}
	floor := fmt.Sprintf("at least %d %s (min_vcpus)", minVCPUs, unit)
	if defaulted {
		floor = fmt.Sprintf("at least %d vCPUs (min_vcpus unset: %d, the fewest a database node should have; set it to 1 for smaller types)", minVCPUs, minVCPUs)
	}
	return fmt.Sprintf("%s is the smallest of %d candidates that hold %.1f GiB of NVMe per node: fewest vCPUs, then least memory, then least NVMe, with %s.",
		p.Recommended.Name, len(p.Candidates), p.Sizing.RequiredNVMeGiB, floor)
}

// Plan is the ranked result of [Rank].
type Plan struct {
	// Sizing is the requirement the candidates were ranked against.
	Sizing Sizing
	// Candidates are the offers that fit, best first: fewer vCPUs first,
	// then less memory, then less NVMe (the smallest total that holds the
	// requirement), then name. The catalog has no prices; EC2 prices follow
	// vCPUs and memory far more than instance storage, so this order puts
	// the smallest machine that holds the data first.
	Candidates []Candidate
	// Recommended is Candidates[0].
	Recommended Candidate
}

// Rank evaluates offers (already filtered by the hard filters) against s,
// keeps those that fit and ranks them (see [Plan]). When none fits it
// returns a *[NoFitError]. The candidates share the offers' slices.
func Rank(s Sizing, offers []catalog.Offered) (Plan, error) {
	fits := []Candidate{}
	for _, o := range offers {
		if c := Evaluate(s, o); c.Fits {
			fits = append(fits, c)
		}
	}
	if len(fits) == 0 {
		return Plan{}, noFit(s, offers)
	}
	slices.SortStableFunc(fits, func(a, b Candidate) int { return compareOffers(a.Offered, b.Offered) })
	return Plan{Sizing: s, Candidates: fits, Recommended: fits[0]}, nil
}

// Recommend ranks the types of region that f keeps against s (Rank); when none meets the filters, its
// *NoFitError names the filters that bind (catalog.Binding).
func Recommend(s Sizing, types []catalog.InstanceType, region catalog.Region, f catalog.Filter) (Plan, error) {
	p, err := Rank(s, catalog.Select(types, region, f))
	var nofit *NoFitError
	if errors.As(err, &nofit) && nofit.Reason == ReasonHardFilters {
		nofit.Binding, nofit.BindingRead = catalog.Binding(types, region, f), true
	}
	return p, err
}

// MinVCPUs is the vCPU floor a plan applies: the one given, else DefaultMinVCPUs (defaulted true).
func MinVCPUs(given int, set bool) (floor int, defaulted bool) {
	if set {
		return given, false
	}
	return DefaultMinVCPUs, true
}

// compareOffers is the ranking order: VCPUs, MemoryMiB, TotalGB, Name.
func compareOffers(a, b catalog.Offered) int {
	return cmp.Or(
		cmp.Compare(a.VCPUs, b.VCPUs),
		cmp.Compare(a.MemoryMiB, b.MemoryMiB),
		cmp.Compare(a.TotalGB, b.TotalGB),
		strings.Compare(a.Name, b.Name),
	)
}

// The binding constraints a NoFitError names.
const (
	// ReasonHardFilters: no type meets the vCPU, memory, architecture,
	// family and zone filters.
	ReasonHardFilters = "hard_filters"
	// ReasonNVMeCapacity: types meet those filters, but none has enough NVMe.
	ReasonNVMeCapacity = "nvme_capacity"
)

// NoFitError is Rank's error when no candidate fits.
type NoFitError struct {
	// RequiredNVMeGiB is the NVMe each node needs.
	RequiredNVMeGiB float64
	// Closest is the largest offer (most NVMe; ties broken by the ranking
	// order), nil when there were no offers.
	Closest *catalog.Offered
	// Reason is the binding constraint: ReasonHardFilters or ReasonNVMeCapacity.
	Reason string
	// Sizing is the requirement that was not met.
	Sizing Sizing
	// Binding are the filters that exclude every type on their own (catalog.Binding), when Recommend read
	// them (BindingRead); none read with several binding together.
	Binding     []string
	BindingRead bool
}

// Error says what is missing and what to change.
func (e *NoFitError) Error() string {
	if e.Closest == nil {
		msg := fmt.Sprintf("No instance type meets the hard filters (vCPUs, memory, architectures, families, zones), "+
			"before NVMe is even considered; relax them (the plan needs %.1f GiB of NVMe per node).", e.RequiredNVMeGiB)
		switch {
		case len(e.Binding) > 0:
			msg += "\n\nWhat binds: " + strings.Join(e.Binding, "; ") + "."
		case e.BindingRead:
			msg += "\n\nNo single filter binds: several exclude every type together; relax more than one."
		}
		return msg
	}
	s := e.Sizing
	return fmt.Sprintf("The plan needs %.1f GiB of NVMe per node ((%.1f GiB bloated dataset + %.1f GiB WAL reserve) / %g "+
		"maximum utilisation, at %d months); the largest candidate that meets the other filters is %s with %.1f GiB, "+
		"which would be %.0f%% full (limit %.0f%%). Lower the dataset, growth, horizon or bloat factor, raise the maximum disk "+
		"utilisation, or allow families with larger NVMe.",
		e.RequiredNVMeGiB, s.BloatedGiB, s.WALReserveGiB, s.MaxDiskUtilization, s.HorizonMonths,
		e.Closest.Name, e.Closest.TotalGiB(), 100*ratio(s.BloatedGiB+s.WALReserveGiB, e.Closest.TotalGiB()), 100*s.MaxDiskUtilization)
}

func noFit(s Sizing, offers []catalog.Offered) *NoFitError {
	e := &NoFitError{RequiredNVMeGiB: s.RequiredNVMeGiB, Reason: ReasonHardFilters, Sizing: s}
	for i := range offers {
		o := offers[i]
		if e.Closest == nil || o.TotalGB > e.Closest.TotalGB ||
			(o.TotalGB == e.Closest.TotalGB && compareOffers(o, *e.Closest) < 0) {
			e.Closest = &o
		}
	}
	if e.Closest != nil {
		e.Reason = ReasonNVMeCapacity
	}
	return e
}

// ratio is a/b, +Inf when b is 0 and a is not.
func ratio(a, b float64) float64 {
	if b == 0 {
		if a == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return a / b
}
