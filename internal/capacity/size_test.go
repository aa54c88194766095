package capacity_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/capacity"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

// offer builds an offered type with one zone; totalGB is in GB (10^9 bytes)
// as AWS reports it.
func offer(name string, vcpus int, memGiB int64, totalGB int64) catalog.Offered {
	return catalog.Offered{
		InstanceType: catalog.InstanceType{
			Name: name, VCPUs: vcpus, MemoryMiB: memGiB * 1024, DiskCount: 1, DiskSizeGB: totalGB, TotalGB: totalGB,
			NVMeSupport: "required", Architectures: []string{"x86_64"},
		},
		ZoneIDs: []string{"use1-az1"}, Zones: []string{"us-east-1a"},
	}
}

var (
	i4iXlarge   = offer("i4i.xlarge", 4, 32, 937)
	c6id4xlarge = offer("c6id.4xlarge", 16, 32, 950)
	m6id2xlarge = offer("m6id.2xlarge", 8, 32, 474)
	m6id4xlarge = offer("m6id.4xlarge", 16, 64, 950)
	r6id4xlarge = offer("r6id.4xlarge", 16, 128, 950)
	m6id8xlarge = offer("m6id.8xlarge", 32, 128, 1900)
	i4i4xlarge  = offer("i4i.4xlarge", 16, 128, 3750)
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestSize(t *testing.T) {
	talk := capacity.NewRequest(482)
	withGrowth := talk
	withGrowth.GrowthGiBPerMonth = 10
	noReserve := talk
	noReserve.WALReserveGiB = 0
	small := capacity.NewRequest(10)
	working := talk
	working.WorkingSetGiB = 100
	working.NodeCount = 2
	full := talk
	full.MaxDiskUtilization = 1
	full.BloatFactor = 1
	full.HorizonMonths = 0
	full.GrowthGiBPerMonth = 50

	for _, tc := range []struct {
		name string
		req  capacity.Request
		want capacity.Sizing
	}{
		// The talk's workload with every default: 482 x 1.2 = 578.4;
		// WAL max(16, 57.84) = 57.84; (578.4 + 57.84) / 0.75 = 848.32.
		{"talk defaults", talk, capacity.Sizing{
			ProjectedDatasetGiB: 482, BloatedGiB: 578.4, WALReserveGiB: 57.84, RequiredNVMeGiB: 848.32, WorkingSetGiB: 482,
			HorizonMonths: 12, BloatFactor: 1.2, MaxDiskUtilization: 0.75, NodeCount: 3, ClusterNVMeGiB: 2544.96}},
		// 482 + 10 x 12 = 602; x 1.2 = 722.4; WAL 72.24; 794.64 / 0.75 = 1059.52.
		{"growth", withGrowth, capacity.Sizing{
			ProjectedDatasetGiB: 602, BloatedGiB: 722.4, WALReserveGiB: 72.24, RequiredNVMeGiB: 1059.52, WorkingSetGiB: 602,
			HorizonMonths: 12, BloatFactor: 1.2, MaxDiskUtilization: 0.75, NodeCount: 3, ClusterNVMeGiB: 3178.56}},
		// An explicit 0 reserve is taken literally: 578.4 / 0.75 = 771.2.
		{"explicit zero WAL reserve", noReserve, capacity.Sizing{
			ProjectedDatasetGiB: 482, BloatedGiB: 578.4, WALReserveGiB: 0, RequiredNVMeGiB: 771.2, WorkingSetGiB: 482,
			HorizonMonths: 12, BloatFactor: 1.2, MaxDiskUtilization: 0.75, NodeCount: 3, ClusterNVMeGiB: 2313.6}},
		// The 16 GiB floor: 12 x 10% < 16; (12 + 16) / 0.75 = 37.333.
		{"small dataset WAL floor", small, capacity.Sizing{
			ProjectedDatasetGiB: 10, BloatedGiB: 12, WALReserveGiB: 16, RequiredNVMeGiB: 28.0 / 0.75, WorkingSetGiB: 10,
			HorizonMonths: 12, BloatFactor: 1.2, MaxDiskUtilization: 0.75, NodeCount: 3, ClusterNVMeGiB: 3 * 28.0 / 0.75}},
		{"working set and nodes given", working, capacity.Sizing{
			ProjectedDatasetGiB: 482, BloatedGiB: 578.4, WALReserveGiB: 57.84, RequiredNVMeGiB: 848.32, WorkingSetGiB: 100,
			HorizonMonths: 12, BloatFactor: 1.2, MaxDiskUtilization: 0.75, NodeCount: 2, ClusterNVMeGiB: 1696.64}},
		// Horizon 0 means no growth counted; bloat 1 and utilisation 1 leave only the reserve.
		{"horizon zero, no headroom", full, capacity.Sizing{
			ProjectedDatasetGiB: 482, BloatedGiB: 482, WALReserveGiB: 48.2, RequiredNVMeGiB: 530.2, WorkingSetGiB: 482,
			HorizonMonths: 0, BloatFactor: 1, MaxDiskUtilization: 1, NodeCount: 3, ClusterNVMeGiB: 1590.6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.req.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got := capacity.Size(tc.req)
			for _, f := range []struct {
				name      string
				got, want float64
			}{
				{"ProjectedDatasetGiB", got.ProjectedDatasetGiB, tc.want.ProjectedDatasetGiB},
				{"BloatedGiB", got.BloatedGiB, tc.want.BloatedGiB},
				{"WALReserveGiB", got.WALReserveGiB, tc.want.WALReserveGiB},
				{"RequiredNVMeGiB", got.RequiredNVMeGiB, tc.want.RequiredNVMeGiB},
				{"WorkingSetGiB", got.WorkingSetGiB, tc.want.WorkingSetGiB},
				{"BloatFactor", got.BloatFactor, tc.want.BloatFactor},
				{"MaxDiskUtilization", got.MaxDiskUtilization, tc.want.MaxDiskUtilization},
				{"ClusterNVMeGiB", got.ClusterNVMeGiB, tc.want.ClusterNVMeGiB},
			} {
				if !near(f.got, f.want) {
					t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
				}
			}
			if got.HorizonMonths != tc.want.HorizonMonths || got.NodeCount != tc.want.NodeCount {
				t.Errorf("HorizonMonths, NodeCount = %d, %d, want %d, %d", got.HorizonMonths, got.NodeCount, tc.want.HorizonMonths, tc.want.NodeCount)
			}
		})
	}
}

func TestEvaluate_talkWorkload(t *testing.T) {
	s := capacity.Size(capacity.NewRequest(482))
	for _, tc := range []struct {
		offer    catalog.Offered
		totalGiB float64
		util     float64 // (578.4 + 57.84) / TotalGiB
		memRatio float64 // MemoryGiB / 482
		fits     bool
	}{
		// 950 GB = 884.756 GiB; 636.24 / 884.756 = 0.7191.
		{m6id4xlarge, 884.7564, 0.719113, 64.0 / 482, true},
		// 937 GB = 872.649 GiB: still holds 848.32.
		{i4iXlarge, 872.6493, 0.729090, 32.0 / 482, true},
		// 474 GB = 441.447 GiB: 144% full.
		{m6id2xlarge, 441.4469, 1.441261, 32.0 / 482, false},
	} {
		t.Run(tc.offer.Name, func(t *testing.T) {
			c := capacity.Evaluate(s, tc.offer)
			if math.Abs(c.TotalGiB()-tc.totalGiB) > 1e-4 {
				t.Errorf("TotalGiB = %.4f, want %.4f", c.TotalGiB(), tc.totalGiB)
			}
			if math.Abs(c.DiskUtilization-tc.util) > 1e-6 {
				t.Errorf("DiskUtilization = %.6f, want %.6f", c.DiskUtilization, tc.util)
			}
			if !near(c.MemoryToWorkingSet, tc.memRatio) {
				t.Errorf("MemoryToWorkingSet = %v, want %v", c.MemoryToWorkingSet, tc.memRatio)
			}
			if c.Fits != tc.fits {
				t.Errorf("Fits = %v, want %v", c.Fits, tc.fits)
			}
			if c.Fits != (c.DiskUtilization <= s.MaxDiskUtilization) {
				t.Errorf("Fits = %v disagrees with utilisation %.4f against %.2f", c.Fits, c.DiskUtilization, s.MaxDiskUtilization)
			}
			if c.Name != tc.offer.Name || !slices.Equal(c.ZoneIDs, tc.offer.ZoneIDs) {
				t.Errorf("Candidate lost the offer: %+v", c.Offered)
			}
		})
	}
}

func TestEvaluate_zeroStorage(t *testing.T) {
	c := capacity.Evaluate(capacity.Size(capacity.NewRequest(1)), offer("x.large", 2, 8, 0))
	if !math.IsInf(c.DiskUtilization, 1) || c.Fits {
		t.Errorf("a type without storage: utilisation %v, fits %v; want +Inf, false", c.DiskUtilization, c.Fits)
	}
}

func TestRank(t *testing.T) {
	twinA, twinB := offer("z1d.a", 8, 64, 1000), offer("z1d.b", 8, 64, 1000)
	for _, tc := range []struct {
		name    string
		dataset float64
		offers  []catalog.Offered
		want    []string
	}{
		{
			// Fewer vCPUs first (i4i.xlarge, 4), then at 16 vCPUs less memory
			// (c6id, m6id, then r6id and i4i.4xlarge at 128 GiB, the smaller disk
			// first), then 32 vCPUs.
			name:    "talk workload",
			dataset: 482,
			offers:  []catalog.Offered{i4i4xlarge, r6id4xlarge, m6id8xlarge, m6id2xlarge, m6id4xlarge, c6id4xlarge, i4iXlarge},
			want:    []string{"i4i.xlarge", "c6id.4xlarge", "m6id.4xlarge", "r6id.4xlarge", "i4i.4xlarge", "m6id.8xlarge"},
		},
		{
			name:    "exact ties by name",
			dataset: 100,
			offers:  []catalog.Offered{twinB, offer("z1d.c", 4, 64, 1000), twinA, offer("z1d.d", 4, 32, 1000)},
			want:    []string{"z1d.d", "z1d.c", "z1d.a", "z1d.b"},
		},
		{
			// (1.2 x 600 + 72) / 0.75 = 1056 GiB: only the two large types.
			name:    "larger dataset",
			dataset: 600,
			offers:  []catalog.Offered{i4i4xlarge, r6id4xlarge, m6id8xlarge, m6id2xlarge, m6id4xlarge, c6id4xlarge, i4iXlarge},
			want:    []string{"i4i.4xlarge", "m6id.8xlarge"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.offers)
			s := capacity.Size(capacity.NewRequest(tc.dataset))
			plan, err := capacity.Rank(s, tc.offers)
			if err != nil {
				t.Fatalf("Rank: %v", err)
			}
			var got []string
			for _, c := range plan.Candidates {
				got = append(got, c.Name)
				if !c.Fits || c.DiskUtilization > s.MaxDiskUtilization {
					t.Errorf("%s ranked but utilisation %.3f > %.2f", c.Name, c.DiskUtilization, s.MaxDiskUtilization)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order = %v, want %v", got, tc.want)
			}
			if plan.Recommended.Name != tc.want[0] {
				t.Errorf("Recommended = %s, want %s", plan.Recommended.Name, tc.want[0])
			}
			if plan.Sizing != s {
				t.Errorf("Plan.Sizing = %+v, want %+v", plan.Sizing, s)
			}
			for i := range in {
				if in[i].Name != tc.offers[i].Name {
					t.Fatalf("Rank reordered its input")
				}
			}
		})
	}
}

func TestRank_noFit(t *testing.T) {
	for _, tc := range []struct {
		name         string
		dataset      float64
		offers       []catalog.Offered
		reason       string
		closest      string
		wantInError  []string
		wantRequired float64
	}{
		{
			name: "no offers", dataset: 482, offers: nil,
			reason: capacity.ReasonHardFilters,
			wantInError: []string{
				"No instance type meets the hard filters (vCPUs, memory, architectures, families, zones)",
				"relax them", "848.3 GiB of NVMe per node",
			},
			wantRequired: 848.32,
		},
		{
			name: "empty offers", dataset: 482, offers: []catalog.Offered{},
			reason:       capacity.ReasonHardFilters,
			wantInError:  []string{"hard filters", "relax them"},
			wantRequired: 848.32,
		},
		{
			// 1.2 x 2000 = 2400 + 240 = 2640 / 0.75 = 3520 GiB; m6id.8xlarge has
			// 1769.5 GiB: 2640 / 1769.5 = 149% full.
			name: "none big enough", dataset: 2000,
			offers: []catalog.Offered{m6id2xlarge, m6id8xlarge, offer("r6id.8xlarge", 32, 256, 1900), m6id4xlarge},
			reason: capacity.ReasonNVMeCapacity, closest: "m6id.8xlarge",
			wantInError: []string{
				"needs 3520.0 GiB of NVMe per node",
				"(2400.0 GiB bloated dataset + 240.0 GiB WAL reserve) / 0.75 maximum utilisation, at 12 months",
				"the largest candidate that meets the other filters is m6id.8xlarge with 1769.5 GiB",
				"149% full (limit 75%)",
			},
			wantRequired: 3520,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := capacity.Rank(capacity.Size(capacity.NewRequest(tc.dataset)), tc.offers)
			if err == nil {
				t.Fatalf("Rank = %+v, want an error", plan)
			}
			var nofit *capacity.NoFitError
			if !errors.As(err, &nofit) {
				t.Fatalf("error %T is not a *NoFitError: %v", err, err)
			}
			if nofit.Reason != tc.reason {
				t.Errorf("Reason = %q, want %q", nofit.Reason, tc.reason)
			}
			if !near(nofit.RequiredNVMeGiB, tc.wantRequired) {
				t.Errorf("RequiredNVMeGiB = %v, want %v", nofit.RequiredNVMeGiB, tc.wantRequired)
			}
			switch {
			case tc.closest == "" && nofit.Closest != nil:
				t.Errorf("Closest = %s, want nil", nofit.Closest.Name)
			case tc.closest != "" && (nofit.Closest == nil || nofit.Closest.Name != tc.closest):
				t.Errorf("Closest = %v, want %s", nofit.Closest, tc.closest)
			}
			for _, want := range tc.wantInError {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\ndoes not contain %q", err.Error(), want)
				}
			}
		})
	}
}

func TestRequestValidate(t *testing.T) {
	ok := capacity.NewRequest(482)
	with := func(f func(*capacity.Request)) capacity.Request {
		r := ok
		f(&r)
		return r
	}
	for _, tc := range []struct {
		name string
		req  capacity.Request
		want []string // substrings of the error; none means valid
	}{
		{"defaults", ok, nil},
		{"explicit WAL reserve", with(func(r *capacity.Request) { r.WALReserveGiB = 20 }), nil},
		{"zero WAL reserve", with(func(r *capacity.Request) { r.WALReserveGiB = 0 }), nil},
		{"horizon zero", with(func(r *capacity.Request) { r.HorizonMonths = 0 }), nil},
		{"utilisation one", with(func(r *capacity.Request) { r.MaxDiskUtilization = 1 }), nil},
		{"bloat one", with(func(r *capacity.Request) { r.BloatFactor = 1 }), nil},
		{"working set given", with(func(r *capacity.Request) { r.WorkingSetGiB = 50 }), nil},
		{"zero dataset", with(func(r *capacity.Request) { r.DatasetGiB = 0 }), []string{"The dataset is 0 GiB", "greater than 0"}},
		{"negative dataset", with(func(r *capacity.Request) { r.DatasetGiB = -5 }), []string{"The dataset is -5 GiB"}},
		{"NaN dataset", with(func(r *capacity.Request) { r.DatasetGiB = math.NaN() }), []string{"finite number"}},
		{"infinite growth", with(func(r *capacity.Request) { r.GrowthGiBPerMonth = math.Inf(1) }), []string{"finite number"}},
		{"negative growth", with(func(r *capacity.Request) { r.GrowthGiBPerMonth = -1 }), []string{"growth is -1 GiB per month; set it to 0 or more"}},
		{"negative horizon", with(func(r *capacity.Request) { r.HorizonMonths = -1 }), []string{"horizon is -1 months"}},
		{"bloat below one", with(func(r *capacity.Request) { r.BloatFactor = 0.9 }), []string{"bloat factor is 0.9; set it to 1 (no bloat) to 10"}},
		{"bloat zero", with(func(r *capacity.Request) { r.BloatFactor = 0 }), []string{"bloat factor is 0"}},
		{"bloat too large", with(func(r *capacity.Request) { r.BloatFactor = 11 }), []string{"bloat factor is 11"}},
		{"utilisation zero", with(func(r *capacity.Request) { r.MaxDiskUtilization = 0 }), []string{"maximum disk utilisation is 0; set it above 0 and at most 1"}},
		{"utilisation negative", with(func(r *capacity.Request) { r.MaxDiskUtilization = -0.5 }), []string{"utilisation is -0.5"}},
		{"utilisation above one", with(func(r *capacity.Request) { r.MaxDiskUtilization = 1.01 }), []string{"utilisation is 1.01"}},
		{"negative working set", with(func(r *capacity.Request) { r.WorkingSetGiB = -1 }), []string{"working set is -1 GiB"}},
		{"zero nodes", with(func(r *capacity.Request) { r.NodeCount = 0 }), []string{"node count is 0"}},
		{"zero value", capacity.Request{}, []string{"dataset is 0", "bloat factor is 0", "utilisation is 0", "node count is 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.req.Validate()
			wantValidation(t, err, tc.want)
		})
	}
}

// wantValidation checks a Validate error: nil when want is empty, else an error containing every string of
// want.
func wantValidation(t *testing.T, err error, want []string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("Validate: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("Validate = nil, want an error containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not contain %q", err.Error(), w)
		}
	}
}
