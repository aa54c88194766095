package catalog_test

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		raw    catalog.RawType
		want   catalog.InstanceType
		wantOK bool
	}{
		{
			name: "nvme ssd",
			raw: catalog.RawType{
				Name: "m6id.4xlarge", VCPUs: 16, MemoryMiB: 65536, StorageSupported: true,
				Disks: []catalog.RawDisk{{Count: 1, SizeGB: 950, Type: "ssd"}}, TotalGB: 950,
				NVMeSupport: "required", Architectures: []string{"x86_64"}, NetworkPerformance: "Up to 12.5 Gigabit",
			},
			want: catalog.InstanceType{
				Name: "m6id.4xlarge", VCPUs: 16, MemoryMiB: 65536, DiskCount: 1, DiskSizeGB: 950, TotalGB: 950,
				NVMeSupport: "required", Architectures: []string{"x86_64"}, NetworkPerformance: "Up to 12.5 Gigabit",
			},
			wantOK: true,
		},
		{
			name: "several ssd disks, architectures sorted",
			raw: catalog.RawType{
				Name: "i4g.16xlarge", VCPUs: 64, MemoryMiB: 524288, StorageSupported: true,
				Disks: []catalog.RawDisk{{Count: 4, SizeGB: 3750, Type: "ssd"}}, TotalGB: 15000,
				NVMeSupport: "required", Architectures: []string{"x86_64", "arm64"},
			},
			want: catalog.InstanceType{
				Name: "i4g.16xlarge", VCPUs: 64, MemoryMiB: 524288, DiskCount: 4, DiskSizeGB: 3750, TotalGB: 15000,
				NVMeSupport: "required", Architectures: []string{"arm64", "x86_64"},
			},
			wantOK: true,
		},
		{
			name: "ssd without nvme (xen generation)",
			raw: catalog.RawType{
				Name: "c3.2xlarge", VCPUs: 8, MemoryMiB: 15360, StorageSupported: true,
				Disks: []catalog.RawDisk{{Count: 2, SizeGB: 80, Type: "ssd"}}, TotalGB: 160, NVMeSupport: "unsupported",
			},
			want: catalog.InstanceType{
				Name: "c3.2xlarge", VCPUs: 8, MemoryMiB: 15360, DiskCount: 2, DiskSizeGB: 80, TotalGB: 160, NVMeSupport: "unsupported",
			},
			wantOK: true,
		},
		{
			name: "hdd only (d3) is dropped",
			raw: catalog.RawType{
				Name: "d3.xlarge", VCPUs: 4, MemoryMiB: 32768, StorageSupported: true,
				Disks: []catalog.RawDisk{{Count: 3, SizeGB: 1980, Type: "hdd"}}, TotalGB: 5940, NVMeSupport: "required",
			},
		},
		{
			name: "hdd only (h1) is dropped",
			raw: catalog.RawType{
				Name: "h1.2xlarge", StorageSupported: true,
				Disks: []catalog.RawDisk{{Count: 1, SizeGB: 2000, Type: "hdd"}}, TotalGB: 2000,
			},
		},
		{
			name: "no instance storage is dropped",
			raw:  catalog.RawType{Name: "m5.large", VCPUs: 2, MemoryMiB: 8192},
		},
		{
			name: "a name that looks like nvme is not enough",
			raw:  catalog.RawType{Name: "m6id.large", VCPUs: 2, MemoryMiB: 8192, StorageSupported: true},
		},
		{
			name: "storage not supported wins over stray disks",
			raw: catalog.RawType{
				Name: "x.large", Disks: []catalog.RawDisk{{Count: 1, SizeGB: 100, Type: "ssd"}}, TotalGB: 100,
			},
		},
		{
			name: "no name",
			raw: catalog.RawType{
				StorageSupported: true, Disks: []catalog.RawDisk{{Count: 1, SizeGB: 100, Type: "ssd"}}, TotalGB: 100,
			},
		},
		{
			name: "zero-sized ssd group is ignored",
			raw: catalog.RawType{
				Name: "x.large", StorageSupported: true, Disks: []catalog.RawDisk{{Count: 0, SizeGB: 100, Type: "ssd"}},
			},
		},
		{
			name: "mixed ssd and hdd: only ssd counts",
			raw: catalog.RawType{
				Name: "mix.large", VCPUs: 2, StorageSupported: true,
				Disks: []catalog.RawDisk{
					{Count: 2, SizeGB: 1000, Type: "hdd"},
					{Count: 2, SizeGB: 300, Type: "SSD"},
				},
				TotalGB: 2600, NVMeSupport: "Required",
			},
			want: catalog.InstanceType{
				Name: "mix.large", VCPUs: 2, DiskCount: 2, DiskSizeGB: 300, TotalGB: 600, NVMeSupport: "required",
			},
			wantOK: true,
		},
		{
			name: "ssd groups of different sizes: smallest disk, summed total",
			raw: catalog.RawType{
				Name: "odd.large", StorageSupported: true,
				Disks: []catalog.RawDisk{{Count: 1, SizeGB: 400, Type: "ssd"}, {Count: 2, SizeGB: 200, Type: "ssd"}},
			},
			want:   catalog.InstanceType{Name: "odd.large", DiskCount: 3, DiskSizeGB: 200, TotalGB: 800},
			wantOK: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := catalog.Classify(tt.raw)
			if ok != tt.wantOK {
				t.Fatalf("Classify ok = %v, want %v (got %+v)", ok, tt.wantOK, got)
			}
			if !ok {
				return
			}
			if !equalType(got, tt.want) {
				t.Errorf("Classify =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

func TestClassifyDoesNotAlias(t *testing.T) {
	t.Parallel()
	archs := []string{"x86_64", "arm64"}
	raw := catalog.RawType{
		Name: "a.large", StorageSupported: true, Architectures: archs,
		Disks: []catalog.RawDisk{{Count: 1, SizeGB: 1, Type: "ssd"}},
	}
	got, ok := catalog.Classify(raw)
	if !ok {
		t.Fatal("Classify dropped an SSD type")
	}
	if archs[0] != "x86_64" {
		t.Errorf("Classify sorted the caller's slice: %v", archs)
	}
	got.Architectures[0] = "changed"
	if archs[0] != "x86_64" || archs[1] != "arm64" {
		t.Errorf("result shares memory with the input: %v", archs)
	}
}

func TestConversions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ                       catalog.InstanceType
		family                    string
		totalGiB, diskGiB, memGiB float64
	}{
		{
			typ:    catalog.InstanceType{Name: "m6id.4xlarge", TotalGB: 950, DiskSizeGB: 950, MemoryMiB: 65536},
			family: "m6id", totalGiB: 884.76, diskGiB: 884.76, memGiB: 64,
		},
		{
			typ:    catalog.InstanceType{Name: "i4i.32xlarge", TotalGB: 30000, DiskSizeGB: 3750, MemoryMiB: 1048576},
			family: "i4i", totalGiB: 27939.68, diskGiB: 3492.46, memGiB: 1024,
		},
		{
			typ:    catalog.InstanceType{Name: "c5d.large", TotalGB: 50, DiskSizeGB: 50, MemoryMiB: 4096},
			family: "c5d", totalGiB: 46.57, diskGiB: 46.57, memGiB: 4,
		},
		{typ: catalog.InstanceType{Name: "nodot"}, family: "nodot"},
	}
	for _, tt := range tests {
		t.Run(tt.typ.Name, func(t *testing.T) {
			t.Parallel()
			if got := tt.typ.Family(); got != tt.family {
				t.Errorf("Family() = %q, want %q", got, tt.family)
			}
			if got := round2(tt.typ.TotalGiB()); got != tt.totalGiB {
				t.Errorf("TotalGiB() = %v, want %v", got, tt.totalGiB)
			}
			if got := round2(tt.typ.DiskSizeGiB()); got != tt.diskGiB {
				t.Errorf("DiskSizeGiB() = %v, want %v", got, tt.diskGiB)
			}
			if got := tt.typ.MemoryGiB(); got != tt.memGiB {
				t.Errorf("MemoryGiB() = %v, want %v", got, tt.memGiB)
			}
		})
	}
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

func equalType(a, b catalog.InstanceType) bool {
	if !slices.Equal(a.Architectures, b.Architectures) {
		return false
	}
	a.Architectures, b.Architectures = nil, nil
	return reflect.DeepEqual(a, b)
}

func TestSpecialPurpose(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		t    catalog.InstanceType
		want bool
	}{
		{"general purpose", catalog.InstanceType{Name: "m6id.4xlarge", Architectures: []string{"x86_64"}}, false},
		{"gpu", catalog.InstanceType{Name: "g5.4xlarge", Architectures: []string{"x86_64"}, Accelerators: []string{"gpu"}}, true},
		{"fpga", catalog.InstanceType{Name: "f2.6xlarge", Architectures: []string{"x86_64"}, Accelerators: []string{"fpga"}}, true},
		{"mac only", catalog.InstanceType{Name: "mac-m4.metal", Architectures: []string{"arm64_mac"}}, true},
		{"mac and plain arm", catalog.InstanceType{Name: "x.metal", Architectures: []string{"arm64", "arm64_mac"}}, false},
		{"no architectures", catalog.InstanceType{Name: "x.large"}, false},
	} {
		if got := tc.t.SpecialPurpose(); got != tc.want {
			t.Errorf("%s: SpecialPurpose() = %v, want %v", tc.name, got, tc.want)
		}
	}

	it, ok := catalog.Classify(catalog.RawType{
		Name: "g5.4xlarge", StorageSupported: true, VCPUs: 16, MemoryMiB: 65536,
		Disks: []catalog.RawDisk{{Count: 1, SizeGB: 600, Type: "ssd"}}, TotalGB: 600,
		Architectures: []string{"x86_64"}, Accelerators: []string{"media", "gpu", "gpu"},
	})
	if !ok || !slices.Equal(it.Accelerators, []string{"gpu", "media"}) {
		t.Errorf("Classify accelerators = %v, %v; want [gpu media], true", it.Accelerators, ok)
	}
}

func TestSelectExcludeSpecialPurpose(t *testing.T) {
	t.Parallel()
	region := catalog.Region{
		Name:  "us-east-1",
		Zones: []catalog.Zone{{Name: "us-east-1a", ID: "use1-az6"}},
		Offerings: map[string][]string{
			"m6id.4xlarge": {"use1-az6"}, "g5.4xlarge": {"use1-az6"}, "mac-m4.metal": {"use1-az6"},
		},
	}
	types := []catalog.InstanceType{
		{Name: "g5.4xlarge", VCPUs: 16, TotalGB: 600, Architectures: []string{"x86_64"}, Accelerators: []string{"gpu"}},
		{Name: "m6id.4xlarge", VCPUs: 16, TotalGB: 950, Architectures: []string{"x86_64"}},
		{Name: "mac-m4.metal", VCPUs: 10, TotalGB: 500, Architectures: []string{"arm64_mac"}},
	}
	names := func(f catalog.Filter) []string {
		var out []string
		for _, o := range catalog.Select(types, region, f) {
			out = append(out, o.Name)
		}
		return out
	}
	if got := names(catalog.Filter{}); len(got) != 3 {
		t.Errorf("no exclusion: %v, want all three", got)
	}
	types[1].PreviousGeneration = true
	if got := names(catalog.Filter{ExcludePreviousGeneration: true}); !slices.Equal(got, []string{"mac-m4.metal", "g5.4xlarge"}) {
		t.Errorf("previous generation excluded: %v, want [mac-m4.metal g5.4xlarge]", got)
	}
	types[1].PreviousGeneration = false
	if got := names(catalog.Filter{ExcludeSpecialPurpose: true}); !slices.Equal(got, []string{"m6id.4xlarge"}) {
		t.Errorf("excluded: %v, want [m6id.4xlarge]", got)
	}
	// Naming the family explicitly lets a special-purpose type back in.
	if got := names(catalog.Filter{ExcludeSpecialPurpose: true, Families: []string{"g5", "m6id"}}); !slices.Equal(got, []string{"g5.4xlarge", "m6id.4xlarge"}) {
		t.Errorf("family named: %v, want [g5.4xlarge m6id.4xlarge]", got)
	}
}
