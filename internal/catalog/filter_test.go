package catalog_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

func TestFilterValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		filter   catalog.Filter
		errParts []string // nil: valid
	}{
		{name: "zero filter"},
		{name: "everything set", filter: catalog.Filter{
			MinNVMeGiB: 500, MaxNVMeGiB: 2000, MinVCPUs: 8, MinMemoryGiB: 32,
			Architectures: []string{"x86_64", "arm64"}, Families: []string{"m6id", "i4i"}, ExcludeFamilies: []string{"c5d"},
			OfferedInZoneIDs: []string{"use1-az1"}, MinZones: 3,
		}},
		{name: "min equals max", filter: catalog.Filter{MinNVMeGiB: 100, MaxNVMeGiB: 100}},
		{name: "only max", filter: catalog.Filter{MaxNVMeGiB: 100}},
		{name: "negative min nvme", filter: catalog.Filter{MinNVMeGiB: -1}, errParts: []string{"minimum NVMe size", "0 or more"}},
		{name: "negative max nvme", filter: catalog.Filter{MaxNVMeGiB: -5}, errParts: []string{"maximum NVMe size"}},
		{name: "NaN memory", filter: catalog.Filter{MinMemoryGiB: math.NaN()}, errParts: []string{"minimum memory", "finite"}},
		{name: "infinite nvme", filter: catalog.Filter{MaxNVMeGiB: math.Inf(1)}, errParts: []string{"finite"}},
		{name: "min above max", filter: catalog.Filter{MinNVMeGiB: 2000, MaxNVMeGiB: 1000}, errParts: []string{"larger than the maximum", "lower the minimum or raise the maximum"}},
		{name: "negative vcpus", filter: catalog.Filter{MinVCPUs: -2}, errParts: []string{"vCPU"}},
		{name: "negative memory", filter: catalog.Filter{MinMemoryGiB: -1}, errParts: []string{"minimum memory"}},
		{name: "negative zones", filter: catalog.Filter{MinZones: -1}, errParts: []string{"zone count"}},
		{name: "unknown architecture", filter: catalog.Filter{Architectures: []string{"amd64"}}, errParts: []string{`"amd64"`, "arm64, i386, x86_64, x86_64_mac, arm64_mac"}},
		{name: "duplicate architecture", filter: catalog.Filter{Architectures: []string{"arm64", "arm64"}}, errParts: []string{"listed twice"}},
		{name: "family allowed and excluded", filter: catalog.Filter{Families: []string{"m6id"}, ExcludeFamilies: []string{"m6id"}}, errParts: []string{`"m6id" is both allowed and excluded`}},
		{name: "instance type as family", filter: catalog.Filter{Families: []string{"m6id.4xlarge"}}, errParts: []string{"not a family", `"m6id"`}},
		{name: "empty excluded family", filter: catalog.Filter{ExcludeFamilies: []string{""}}, errParts: []string{"empty family"}},
		{name: "duplicate zone id", filter: catalog.Filter{OfferedInZoneIDs: []string{"use1-az1", "use1-az1"}}, errParts: []string{`"use1-az1" is listed twice`}},
		{name: "empty zone id", filter: catalog.Filter{OfferedInZoneIDs: []string{" "}}, errParts: []string{"empty value"}},
		{name: "all problems reported", filter: catalog.Filter{MinVCPUs: -1, MinZones: -1}, errParts: []string{"vCPU", "zone count"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.filter.Validate()
			if tt.errParts == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate accepted the filter")
			}
			for _, p := range tt.errParts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q does not contain %q", err, p)
				}
			}
		})
	}
}

func selectFixture() ([]catalog.InstanceType, catalog.Region) {
	types := []catalog.InstanceType{
		{Name: "m6id.4xlarge", VCPUs: 16, MemoryMiB: 65536, DiskCount: 1, DiskSizeGB: 950, TotalGB: 950, NVMeSupport: "required", Architectures: []string{"x86_64"}},
		{Name: "r6id.2xlarge", VCPUs: 8, MemoryMiB: 65536, DiskCount: 1, DiskSizeGB: 474, TotalGB: 474, NVMeSupport: "required", Architectures: []string{"x86_64"}},
		{Name: "m6gd.4xlarge", VCPUs: 16, MemoryMiB: 65536, DiskCount: 1, DiskSizeGB: 950, TotalGB: 950, NVMeSupport: "required", Architectures: []string{"arm64"}},
		{Name: "c6id.4xlarge", VCPUs: 16, MemoryMiB: 32768, DiskCount: 1, DiskSizeGB: 950, TotalGB: 950, NVMeSupport: "required", Architectures: []string{"x86_64"}},
		{Name: "m6id.8xlarge", VCPUs: 32, MemoryMiB: 131072, DiskCount: 1, DiskSizeGB: 1900, TotalGB: 1900, NVMeSupport: "required", Architectures: []string{"x86_64"}},
		{Name: "i4i.8xlarge", VCPUs: 32, MemoryMiB: 262144, DiskCount: 2, DiskSizeGB: 3750, TotalGB: 7500, NVMeSupport: "required", Architectures: []string{"x86_64"}},
		{Name: "c5d.large", VCPUs: 2, MemoryMiB: 4096, DiskCount: 1, DiskSizeGB: 50, TotalGB: 50, NVMeSupport: "required", Architectures: []string{"x86_64"}},
		{Name: "x2idn.16xlarge", VCPUs: 64, MemoryMiB: 1048576, DiskCount: 1, DiskSizeGB: 1900, TotalGB: 1900, NVMeSupport: "required", Architectures: []string{"x86_64"}},
	}
	region := useast1()
	region.Offerings = map[string][]string{
		"m6id.4xlarge": {"use1-az6", "use1-az1", "use1-az2", "use1-az4"},
		"r6id.2xlarge": {"use1-az1", "use1-az2"},
		"m6gd.4xlarge": {"use1-az1", "use1-az2", "use1-az4"},
		"c6id.4xlarge": {"use1-az1", "use1-az6"},
		"m6id.8xlarge": {"use1-az1", "use1-az4", "use1-az6"},
		"i4i.8xlarge":  {"use1-az6", "use1-az3"}, // use1-az3 is not a known zone of the fixture
		"c5d.large":    {"use1-az1", "use1-az2", "use1-az4", "use1-az6"},
		// x2idn.16xlarge: not offered in this region
	}
	return types, region
}

func TestSelect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		filter catalog.Filter
		want   []string
	}{
		{
			name:   "zero filter: everything offered, by size, vCPUs, memory, name",
			filter: catalog.Filter{},
			want:   []string{"c5d.large", "r6id.2xlarge", "c6id.4xlarge", "m6gd.4xlarge", "m6id.4xlarge", "m6id.8xlarge", "i4i.8xlarge"},
		},
		{name: "min nvme in GiB: 884.75 keeps 950 GB", filter: catalog.Filter{MinNVMeGiB: 884.75}, want: []string{"c6id.4xlarge", "m6gd.4xlarge", "m6id.4xlarge", "m6id.8xlarge", "i4i.8xlarge"}},
		{name: "min nvme in GiB: 885 drops 950 GB", filter: catalog.Filter{MinNVMeGiB: 885}, want: []string{"m6id.8xlarge", "i4i.8xlarge"}},
		{name: "max nvme", filter: catalog.Filter{MaxNVMeGiB: 884.76}, want: []string{"c5d.large", "r6id.2xlarge", "c6id.4xlarge", "m6gd.4xlarge", "m6id.4xlarge"}},
		{name: "nvme range", filter: catalog.Filter{MinNVMeGiB: 400, MaxNVMeGiB: 500}, want: []string{"r6id.2xlarge"}},
		{name: "min vcpus", filter: catalog.Filter{MinVCPUs: 32}, want: []string{"m6id.8xlarge", "i4i.8xlarge"}},
		{name: "min memory", filter: catalog.Filter{MinMemoryGiB: 64, MaxNVMeGiB: 1000}, want: []string{"r6id.2xlarge", "m6gd.4xlarge", "m6id.4xlarge"}},
		{name: "architecture", filter: catalog.Filter{Architectures: []string{"arm64"}}, want: []string{"m6gd.4xlarge"}},
		{name: "architecture any of", filter: catalog.Filter{Architectures: []string{"i386", "arm64"}}, want: []string{"m6gd.4xlarge"}},
		{name: "families exact", filter: catalog.Filter{Families: []string{"m6id", "m6"}}, want: []string{"m6id.4xlarge", "m6id.8xlarge"}},
		{name: "exclude families", filter: catalog.Filter{ExcludeFamilies: []string{"c5d", "c6id", "i4i"}}, want: []string{"r6id.2xlarge", "m6gd.4xlarge", "m6id.4xlarge", "m6id.8xlarge"}},
		{name: "offered in every zone", filter: catalog.Filter{OfferedInZoneIDs: []string{"use1-az4", "use1-az6"}}, want: []string{"c5d.large", "m6id.4xlarge", "m6id.8xlarge"}},
		{name: "offered in an unknown zone", filter: catalog.Filter{OfferedInZoneIDs: []string{"use1-az3"}}, want: []string{}},
		{name: "min zones counts known zones only", filter: catalog.Filter{MinZones: 2, MinNVMeGiB: 5000}, want: []string{}},
		{name: "min zones", filter: catalog.Filter{MinZones: 4}, want: []string{"c5d.large", "m6id.4xlarge"}},
		{name: "nothing matches", filter: catalog.Filter{MinVCPUs: 1000}, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			types, region := selectFixture()
			got := catalog.Select(types, region, tt.filter)
			names := make([]string, len(got))
			for i, o := range got {
				names[i] = o.Name
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("Select = %v\nwant      %v", names, tt.want)
			}
		})
	}
}

func TestSelectZones(t *testing.T) {
	t.Parallel()
	types, region := selectFixture()
	got := catalog.Select(types, region, catalog.Filter{Families: []string{"m6id", "i4i"}, MaxNVMeGiB: 8000})
	want := map[string][2][]string{
		"m6id.4xlarge": {{"use1-az1", "use1-az2", "use1-az4", "use1-az6"}, {"us-east-1b", "us-east-1c", "us-east-1d", "us-east-1a"}},
		"m6id.8xlarge": {{"use1-az1", "use1-az4", "use1-az6"}, {"us-east-1b", "us-east-1d", "us-east-1a"}},
		"i4i.8xlarge":  {{"use1-az6"}, {"us-east-1a"}},
	}
	if len(got) != len(want) {
		t.Fatalf("Select returned %d types, want %d", len(got), len(want))
	}
	for _, o := range got {
		w := want[o.Name]
		if !slices.Equal(o.ZoneIDs, w[0]) || !slices.Equal(o.Zones, w[1]) {
			t.Errorf("%s: zones %v %v, want %v %v", o.Name, o.ZoneIDs, o.Zones, w[0], w[1])
		}
	}
}

func TestSelectDeterministicAndNoAliasing(t *testing.T) {
	t.Parallel()
	types, region := selectFixture()
	first := catalog.Select(types, region, catalog.Filter{})
	for i := range 20 {
		shuffled := slices.Clone(types)
		// A fixed, input-dependent permutation: rotate by i and reverse.
		shuffled = append(shuffled[i%len(shuffled):], shuffled[:i%len(shuffled)]...)
		if i%2 == 1 {
			slices.Reverse(shuffled)
		}
		again := catalog.Select(shuffled, region, catalog.Filter{})
		if len(again) != len(first) {
			t.Fatalf("run %d: %d results, want %d", i, len(again), len(first))
		}
		for j := range first {
			if again[j].Name != first[j].Name || !slices.Equal(again[j].ZoneIDs, first[j].ZoneIDs) {
				t.Fatalf("run %d: result %d is %s, want %s", i, j, again[j].Name, first[j].Name)
			}
		}
	}
	// Changing the result must not change the inputs.
	first[0].Architectures[0] = "changed"
	first[0].ZoneIDs[0] = "changed"
	if types[6].Architectures[0] != "x86_64" || region.Offerings["c5d.large"][0] != "use1-az1" {
		t.Error("Select's result shares memory with its inputs")
	}
	// The region's offering lists are not sorted in place.
	if region.Offerings["m6id.4xlarge"][0] != "use1-az6" {
		t.Error("Select sorted the region's offerings in place")
	}
}

// Binding names the one filter whose lifting frees types, with how many; none when f selects a type or
// when no single lift frees one.
func TestBinding(t *testing.T) {
	region := catalog.Region{Name: "r", Zones: []catalog.Zone{{Name: "ra", ID: "r-az1"}, {Name: "rb", ID: "r-az2"}}}
	types := []catalog.InstanceType{
		{Name: "small.large", VCPUs: 2, MemoryMiB: 8192, Architectures: []string{"x86_64"}, TotalGB: 100},
		{Name: "big.xlarge", VCPUs: 4, MemoryMiB: 32768, Architectures: []string{"arm64"}, TotalGB: 200},
	}
	region.Offerings = map[string][]string{"small.large": {"r-az1", "r-az2"}, "big.xlarge": {"r-az1", "r-az2"}}
	if b := catalog.Binding(types, region, catalog.Filter{MinVCPUs: 2}); b != nil {
		t.Errorf("a filter that selects: %v", b)
	}
	if b := catalog.Binding(types, region, catalog.Filter{MinMemoryGiB: 16, Architectures: []string{"x86_64"}}); len(b) != 2 ||
		b[0] != "min_memory_gib = 16 (1 type without it)" || b[1] != "architectures = [x86_64] (1 type without it)" {
		t.Errorf("memory and architecture: %v", b)
	}
	if b := catalog.Binding(types, region, catalog.Filter{MinMemoryGiB: 64, Families: []string{"small"}}); len(b) != 1 || b[0] != "min_memory_gib = 64 (1 type without it)" {
		t.Errorf("memory binds (families with it select nothing either way): %v", b)
	}
	if b := catalog.Binding(types, region, catalog.Filter{MinMemoryGiB: 64, MinVCPUs: 8}); len(b) != 0 {
		t.Errorf("two filters that bind together: %v", b)
	}
}
