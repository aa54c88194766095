package catalog

import (
	"slices"
	"strings"
)

// bytesPerGiB is 2^30: AWS reports instance storage in GB (10^9 bytes), the
// provider reports GiB.
const bytesPerGiB = 1 << 30

// InstanceType is one EC2 instance type whose instance storage has SSD disks.
type InstanceType struct {
	// Name is the instance type name, e.g. "m6id.4xlarge".
	Name string `json:"name"`
	// VCPUs is the default number of vCPUs.
	VCPUs int `json:"vcpus"`
	// MemoryMiB is the memory size in MiB.
	MemoryMiB int64 `json:"memory_mib"`
	// DiskCount is the total number of SSD instance-store disks.
	DiskCount int `json:"disk_count"`
	// DiskSizeGB is the size of one disk in GB (10^9 bytes), as AWS reports it.
	DiskSizeGB int64 `json:"disk_size_gb"`
	// TotalGB is the total SSD instance storage in GB (10^9 bytes):
	// InstanceStorageInfo.TotalSizeInGB.
	TotalGB int64 `json:"total_gb"`
	// NVMeSupport is InstanceStorageInfo.NvmeSupport: "required", "supported"
	// or "unsupported".
	NVMeSupport string `json:"nvme_support"`
	// Architectures are the supported architectures, sorted (see [Architectures]).
	Architectures []string `json:"architectures"`
	// NetworkPerformance is AWS's description, e.g. "Up to 12.5 Gigabit".
	NetworkPerformance string `json:"network_performance"`
	// Accelerators lists the kinds of accelerator the type carries, sorted:
	// "fpga", "gpu", "inference", "media", "neuron". Empty for general types.
	Accelerators []string `json:"accelerators,omitempty"`
	// PreviousGeneration is true when EC2 reports CurrentGeneration false
	// (c3, i2, r3...): older hardware AWS no longer recommends.
	PreviousGeneration bool `json:"previous_generation,omitempty"`
}

// Accelerator kinds, as read from DescribeInstanceTypes (GpuInfo, FpgaInfo,
// InferenceAcceleratorInfo, NeuronInfo, MediaAcceleratorInfo).
const (
	AcceleratorFPGA      = "fpga"
	AcceleratorGPU       = "gpu"
	AcceleratorInference = "inference"
	AcceleratorMedia     = "media"
	AcceleratorNeuron    = "neuron"
)

// NVMe reports whether the type's instance storage attaches as NVMe (EC2's nvme_support "required" or
// "supported"; the snapshot's x1 and x1e say "unsupported"): pgnvme's nodes find and prepare NVMe disks only.
func (t InstanceType) NVMe() bool { return t.NVMeSupport != "unsupported" }

// SpecialPurpose reports whether the type is a poor host for a database
// even though it has local NVMe: it carries accelerators (paid for and
// unused by PostgreSQL) or is a Mac (dedicated hosts only, macOS).
func (t InstanceType) SpecialPurpose() bool {
	if len(t.Accelerators) > 0 {
		return true
	}
	if len(t.Architectures) == 0 {
		return false
	}
	for _, a := range t.Architectures {
		if !strings.HasSuffix(a, "_mac") {
			return false
		}
	}
	return true
}

// Family returns the text before the first '.', e.g. "m6id" for
// "m6id.4xlarge" (the whole name when it has no dot).
func (t InstanceType) Family() string {
	family, _, _ := strings.Cut(t.Name, ".")
	return family
}

// MemoryGiB returns the memory in GiB (MemoryMiB/1024).
func (t InstanceType) MemoryGiB() float64 {
	return float64(t.MemoryMiB) / 1024
}

// TotalGiB returns the total SSD instance storage in GiB (TotalGB*10^9/2^30).
func (t InstanceType) TotalGiB() float64 {
	return gbToGiB(t.TotalGB)
}

// DiskSizeGiB returns the size of one disk in GiB (DiskSizeGB*10^9/2^30).
func (t InstanceType) DiskSizeGiB() float64 {
	return gbToGiB(t.DiskSizeGB)
}

func gbToGiB(gb int64) float64 {
	return float64(gb) * 1e9 / bytesPerGiB
}

// clone returns a copy of t that shares no memory with it.
func (t InstanceType) clone() InstanceType {
	t.Architectures = slices.Clone(t.Architectures)
	t.Accelerators = slices.Clone(t.Accelerators)
	return t
}

// RawDisk is one disk group of InstanceStorageInfo.Disks.
type RawDisk struct {
	Count  int
	SizeGB int64
	// Type is "ssd" or "hdd".
	Type string
}

// RawType is what an adapter read from DescribeInstanceTypes, before the SSD
// decision made by [Classify].
type RawType struct {
	Name               string
	VCPUs              int
	MemoryMiB          int64
	StorageSupported   bool // InstanceStorageSupported
	Disks              []RawDisk
	TotalGB            int64 // InstanceStorageInfo.TotalSizeInGB
	NVMeSupport        string
	Architectures      []string
	NetworkPerformance string
	Accelerators       []string // see the Accelerator* kinds
	PreviousGeneration bool     // CurrentGeneration false
}

// Classify keeps a type only when its instance storage info has SSD disks; it
// never guesses from the name. HDD-only types (d2, d3, h1...) and types
// without instance storage (StorageSupported false or no disks) return
// ok=false, and so does a type without a name.
//
// Only SSD disks count toward DiskCount and DiskSizeGB. TotalGB is the
// reported TotalSizeInGB when every disk is an SSD; should a type ever mix
// SSD and HDD disks, it is the sum of Count*SizeGB over the SSD disks. When
// SSD disk groups have different sizes, DiskSizeGB is the smallest (the
// size a RAID0 over all of them can use per disk).
func Classify(r RawType) (InstanceType, bool) {
	if r.Name == "" || !r.StorageSupported {
		return InstanceType{}, false
	}
	var (
		count   int
		sizeGB  int64
		ssdGB   int64
		mixed   bool
		haveSSD bool
	)
	for _, d := range r.Disks {
		if !strings.EqualFold(d.Type, "ssd") {
			mixed = true
			continue
		}
		if d.Count <= 0 || d.SizeGB <= 0 {
			continue
		}
		haveSSD = true
		count += d.Count
		ssdGB += int64(d.Count) * d.SizeGB
		if sizeGB == 0 || d.SizeGB < sizeGB {
			sizeGB = d.SizeGB
		}
	}
	if !haveSSD {
		return InstanceType{}, false
	}
	total := r.TotalGB
	if mixed || total <= 0 {
		total = ssdGB
	}
	archs := slices.Clone(r.Architectures)
	slices.Sort(archs)
	archs = slices.Compact(archs)
	var accel []string
	if len(r.Accelerators) > 0 {
		accel = slices.Clone(r.Accelerators)
		slices.Sort(accel)
		accel = slices.Compact(accel)
	}
	return InstanceType{
		Name:               r.Name,
		VCPUs:              r.VCPUs,
		MemoryMiB:          r.MemoryMiB,
		DiskCount:          count,
		DiskSizeGB:         sizeGB,
		TotalGB:            total,
		NVMeSupport:        strings.ToLower(r.NVMeSupport),
		Architectures:      archs,
		NetworkPerformance: r.NetworkPerformance,
		Accelerators:       accel,
		PreviousGeneration: r.PreviousGeneration,
	}, true
}

// Architectures are the architecture values EC2 uses in
// ProcessorInfo.SupportedArchitectures.
var Architectures = []string{"arm64", "i386", "x86_64", "x86_64_mac", "arm64_mac"}
