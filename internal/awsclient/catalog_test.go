package awsclient_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

// catalogFakeEC2 serves DescribeInstanceTypes in three pages and
// DescribeInstanceTypeOfferings in two, linked by NextToken, like EC2 does
// and moto does not. It ignores filters (so the HDD-only and no-storage types
// reach Classify) and records every request.
type catalogFakeEC2 struct {
	mu            sync.Mutex
	typeCalls     []*ec2.DescribeInstanceTypesInput
	offeringCalls []*ec2.DescribeInstanceTypeOfferingsInput
	zoneCalls     []*ec2.DescribeAvailabilityZonesInput
	failTypesPage int // 1-based page that fails; 0 = none
	failOfferings bool
	failZones     bool
}

var errCatalogFake = errors.New("fake EC2 failure")

func ssdType(name string, vcpus int32, mib, gb int64, disks int32) ec2types.InstanceTypeInfo {
	return ec2types.InstanceTypeInfo{
		InstanceType:             ec2types.InstanceType(name),
		VCpuInfo:                 &ec2types.VCpuInfo{DefaultVCpus: aws.Int32(vcpus)},
		MemoryInfo:               &ec2types.MemoryInfo{SizeInMiB: aws.Int64(mib)},
		InstanceStorageSupported: aws.Bool(true),
		InstanceStorageInfo: &ec2types.InstanceStorageInfo{
			Disks:         []ec2types.DiskInfo{{Count: aws.Int32(disks), SizeInGB: aws.Int64(gb), Type: ec2types.DiskTypeSsd}},
			TotalSizeInGB: aws.Int64(int64(disks) * gb),
			NvmeSupport:   ec2types.EphemeralNvmeSupportRequired,
		},
		ProcessorInfo: &ec2types.ProcessorInfo{SupportedArchitectures: []ec2types.ArchitectureType{ec2types.ArchitectureTypeX8664}},
		NetworkInfo:   &ec2types.NetworkInfo{NetworkPerformance: aws.String("Up to 12.5 Gigabit")},
	}
}

var catalogFakeTypePages = map[string]struct {
	types []ec2types.InstanceTypeInfo
	next  *string
}{
	"": {types: []ec2types.InstanceTypeInfo{
		ssdType("m6id.4xlarge", 16, 65536, 950, 1),
		{ // HDD only
			InstanceType:             "d3.xlarge",
			InstanceStorageSupported: aws.Bool(true),
			InstanceStorageInfo: &ec2types.InstanceStorageInfo{
				Disks:         []ec2types.DiskInfo{{Count: aws.Int32(3), SizeInGB: aws.Int64(1980), Type: ec2types.DiskTypeHdd}},
				TotalSizeInGB: aws.Int64(5940),
			},
		},
	}, next: aws.String("page-2")},
	"page-2": {types: []ec2types.InstanceTypeInfo{
		{InstanceType: "m5.large", InstanceStorageSupported: aws.Bool(false)}, // no instance storage
		ssdType("c5d.large", 2, 4096, 50, 1),
	}, next: aws.String("page-3")},
	"page-3": {types: []ec2types.InstanceTypeInfo{
		ssdType("i4i.8xlarge", 32, 262144, 3750, 2),
	}},
}

func (f *catalogFakeEC2) DescribeInstanceTypes(_ context.Context, in *ec2.DescribeInstanceTypesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.typeCalls = append(f.typeCalls, in)
	if len(f.typeCalls) == f.failTypesPage {
		return nil, errCatalogFake
	}
	page, ok := catalogFakeTypePages[aws.ToString(in.NextToken)]
	if !ok {
		return nil, fmt.Errorf("fake: unknown NextToken %q", aws.ToString(in.NextToken))
	}
	return &ec2.DescribeInstanceTypesOutput{InstanceTypes: page.types, NextToken: page.next}, nil
}

func offering(name, zoneID string) ec2types.InstanceTypeOffering {
	return ec2types.InstanceTypeOffering{
		InstanceType: ec2types.InstanceType(name),
		Location:     aws.String(zoneID),
		LocationType: ec2types.LocationTypeAvailabilityZoneId,
	}
}

func (f *catalogFakeEC2) DescribeInstanceTypeOfferings(_ context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.offeringCalls = append(f.offeringCalls, in)
	if f.failOfferings {
		return nil, errCatalogFake
	}
	switch aws.ToString(in.NextToken) {
	case "":
		return &ec2.DescribeInstanceTypeOfferingsOutput{
			InstanceTypeOfferings: []ec2types.InstanceTypeOffering{
				offering("m6id.4xlarge", "use1-az6"),
				offering("m6id.4xlarge", "use1-az1"),
				offering("d3.xlarge", "use1-az1"),      // not in the catalog
				offering("m5.large", "use1-az1"),       // not in the catalog
				offering("c5d.large", "use1-bos1-az1"), // a Local Zone, filtered out below
				offering("i4i.8xlarge", "use1-az4"),
			},
			NextToken: aws.String("offerings-2"),
		}, nil
	case "offerings-2":
		return &ec2.DescribeInstanceTypeOfferingsOutput{
			InstanceTypeOfferings: []ec2types.InstanceTypeOffering{
				offering("m6id.4xlarge", "use1-az4"),
				offering("m6id.4xlarge", "use1-az6"), // repeated
				offering("c5d.large", "use1-az2"),
			},
		}, nil
	}
	return nil, fmt.Errorf("fake: unknown NextToken %q", aws.ToString(in.NextToken))
}

func (f *catalogFakeEC2) DescribeAvailabilityZones(_ context.Context, in *ec2.DescribeAvailabilityZonesInput, _ ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.zoneCalls = append(f.zoneCalls, in)
	if f.failZones {
		return nil, errCatalogFake
	}
	zone := func(name, id, typ string, state ec2types.AvailabilityZoneState, optIn ec2types.AvailabilityZoneOptInStatus) ec2types.AvailabilityZone {
		return ec2types.AvailabilityZone{
			ZoneName: aws.String(name), ZoneId: aws.String(id), ZoneType: aws.String(typ),
			State: state, OptInStatus: optIn, RegionName: aws.String("us-east-1"),
		}
	}
	const az = "availability-zone"
	ok, notRequired := ec2types.AvailabilityZoneStateAvailable, ec2types.AvailabilityZoneOptInStatusOptInNotRequired
	return &ec2.DescribeAvailabilityZonesOutput{AvailabilityZones: []ec2types.AvailabilityZone{
		zone("us-east-1a", "use1-az6", az, ok, notRequired),
		zone("us-east-1b", "use1-az1", az, ok, notRequired),
		zone("us-east-1c", "use1-az2", az, ok, notRequired),
		zone("us-east-1d", "use1-az4", az, ok, notRequired),
		zone("us-east-1-bos-1a", "use1-bos1-az1", "local-zone", ok, ec2types.AvailabilityZoneOptInStatusOptedIn),
		zone("us-east-1e", "use1-az3", az, ec2types.AvailabilityZoneStateImpaired, notRequired),
	}}, nil
}

func TestFetchCatalog_pagesAndFilters(t *testing.T) {
	t.Parallel()
	fake := &catalogFakeEC2{}
	types, region, err := awsclient.FetchCatalog(context.Background(), fake, "us-east-1")
	if err != nil {
		t.Fatalf("FetchCatalog: %v", err)
	}

	// Every page was read, following NextToken, with the filter and page size on each request.
	if len(fake.typeCalls) != 3 {
		t.Fatalf("DescribeInstanceTypes called %d times, want 3 (one per page)", len(fake.typeCalls))
	}
	for i, in := range fake.typeCalls {
		wantToken := []string{"", "page-2", "page-3"}[i]
		if got := aws.ToString(in.NextToken); got != wantToken {
			t.Errorf("DescribeInstanceTypes call %d: NextToken %q, want %q", i+1, got, wantToken)
		}
		if aws.ToInt32(in.MaxResults) != 100 {
			t.Errorf("DescribeInstanceTypes call %d: MaxResults %v, want 100", i+1, aws.ToInt32(in.MaxResults))
		}
		if len(in.Filters) != 1 || aws.ToString(in.Filters[0].Name) != "instance-storage-supported" || !slices.Equal(in.Filters[0].Values, []string{"true"}) {
			t.Errorf("DescribeInstanceTypes call %d: filters %+v, want instance-storage-supported=true", i+1, in.Filters)
		}
	}
	if len(fake.offeringCalls) != 2 {
		t.Fatalf("DescribeInstanceTypeOfferings called %d times, want 2 (one per page)", len(fake.offeringCalls))
	}
	for i, in := range fake.offeringCalls {
		if in.LocationType != ec2types.LocationTypeAvailabilityZoneId || aws.ToInt32(in.MaxResults) != 1000 {
			t.Errorf("DescribeInstanceTypeOfferings call %d: LocationType %q MaxResults %v, want availability-zone-id and 1000", i+1, in.LocationType, aws.ToInt32(in.MaxResults))
		}
	}
	if len(fake.zoneCalls) != 1 || aws.ToBool(fake.zoneCalls[0].AllAvailabilityZones) {
		t.Errorf("DescribeAvailabilityZones calls %+v, want one with AllAvailabilityZones false", fake.zoneCalls)
	}

	// Only SSD types, from all three pages, sorted by name.
	names := make([]string, len(types))
	for i, tt := range types {
		names[i] = tt.Name
	}
	if want := []string{"c5d.large", "i4i.8xlarge", "m6id.4xlarge"}; !slices.Equal(names, want) {
		t.Errorf("types %v, want %v", names, want)
	}
	i4i := types[1]
	if i4i.DiskCount != 2 || i4i.DiskSizeGB != 3750 || i4i.TotalGB != 7500 || i4i.VCPUs != 32 || i4i.MemoryMiB != 262144 ||
		i4i.NVMeSupport != "required" || !slices.Equal(i4i.Architectures, []string{"x86_64"}) || i4i.NetworkPerformance != "Up to 12.5 Gigabit" {
		t.Errorf("i4i.8xlarge = %+v", i4i)
	}

	// Zones: available availability zones only, sorted by ID.
	wantZones := []catalog.Zone{
		{Name: "us-east-1b", ID: "use1-az1"}, {Name: "us-east-1c", ID: "use1-az2"},
		{Name: "us-east-1d", ID: "use1-az4"}, {Name: "us-east-1a", ID: "use1-az6"},
	}
	if region.Name != "us-east-1" || !slices.Equal(region.Zones, wantZones) {
		t.Errorf("region %s zones %v, want us-east-1 %v", region.Name, region.Zones, wantZones)
	}
	wantOfferings := map[string][]string{
		"m6id.4xlarge": {"use1-az1", "use1-az4", "use1-az6"},
		"c5d.large":    {"use1-az2"},
		"i4i.8xlarge":  {"use1-az4"},
	}
	if len(region.Offerings) != len(wantOfferings) {
		t.Errorf("offerings %v, want %v", region.Offerings, wantOfferings)
	}
	for name, want := range wantOfferings {
		if got := region.Offerings[name]; !slices.Equal(got, want) {
			t.Errorf("offerings[%s] = %v, want %v", name, got, want)
		}
	}
}

func TestFetchCatalog_errors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fake *catalogFakeEC2
		want string
	}{
		{"first types page", &catalogFakeEC2{failTypesPage: 1}, "describing instance types in us-east-1: page 1: "},
		{"second types page", &catalogFakeEC2{failTypesPage: 2}, "describing instance types in us-east-1: page 2: "},
		{"offerings", &catalogFakeEC2{failOfferings: true}, "describing instance type offerings in us-east-1: page 1: "},
		{"zones", &catalogFakeEC2{failZones: true}, "describing availability zones in us-east-1: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := awsclient.FetchCatalog(context.Background(), tt.fake, "us-east-1")
			if err == nil {
				t.Fatal("FetchCatalog succeeded")
			}
			if !errors.Is(err, errCatalogFake) {
				t.Errorf("error %v does not wrap the API error", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestFetchCatalog_wrongRegion(t *testing.T) {
	t.Parallel()
	_, _, err := awsclient.FetchCatalog(context.Background(), &catalogFakeEC2{}, "us-west-2")
	if err == nil || !strings.Contains(err.Error(), "not configured for us-west-2") {
		t.Errorf("FetchCatalog with a client for another region: %v, want an error naming the mismatch", err)
	}
}

// catalogCountingEC2 counts calls to a real client.
type catalogCountingEC2 struct {
	awsclient.EC2CatalogAPI
	mu                      sync.Mutex
	types, offerings, zones int
}

func (c *catalogCountingEC2) DescribeInstanceTypes(ctx context.Context, in *ec2.DescribeInstanceTypesInput, o ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error) {
	c.mu.Lock()
	c.types++
	c.mu.Unlock()
	return c.EC2CatalogAPI.DescribeInstanceTypes(ctx, in, o...)
}

func (c *catalogCountingEC2) DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, o ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	c.mu.Lock()
	c.offerings++
	c.mu.Unlock()
	return c.EC2CatalogAPI.DescribeInstanceTypeOfferings(ctx, in, o...)
}

func (c *catalogCountingEC2) DescribeAvailabilityZones(ctx context.Context, in *ec2.DescribeAvailabilityZonesInput, o ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error) {
	c.mu.Lock()
	c.zones++
	c.mu.Unlock()
	return c.EC2CatalogAPI.DescribeAvailabilityZones(ctx, in, o...)
}

func TestFetchCatalog_moto(t *testing.T) {
	t.Parallel()
	endpoint := startCatalogMoto(t)
	client := ec2.NewFromConfig(aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
	}, func(o *ec2.Options) { o.BaseEndpoint = aws.String(endpoint) })
	api := &catalogCountingEC2{EC2CatalogAPI: client}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	types, region, err := awsclient.FetchCatalog(ctx, api, "us-east-1")
	if err != nil {
		t.Fatalf("FetchCatalog against moto: %v", err)
	}
	// moto answers in one page: one call each is the floor.
	if api.types != 1 || api.offerings != 1 || api.zones != 1 {
		t.Errorf("API calls: %d DescribeInstanceTypes, %d DescribeInstanceTypeOfferings, %d DescribeAvailabilityZones; want 1 each", api.types, api.offerings, api.zones)
	}
	if len(types) < 100 {
		t.Errorf("only %d types with SSD instance storage", len(types))
	}
	if !slices.IsSortedFunc(types, func(a, b catalog.InstanceType) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("types are not sorted by name")
	}
	byName := map[string]catalog.InstanceType{}
	for _, tt := range types {
		byName[tt.Name] = tt
	}
	m6, ok := byName["m6id.4xlarge"]
	if !ok {
		t.Fatal("m6id.4xlarge missing")
	}
	if m6.TotalGB != 950 || m6.DiskSizeGB != 950 || m6.DiskCount != 1 || m6.VCPUs != 16 || m6.MemoryMiB != 65536 || m6.NVMeSupport != "required" {
		t.Errorf("m6id.4xlarge = %+v, want 1 x 950 GB, 16 vCPUs, 65536 MiB, NVMe required", m6)
	}
	for _, absent := range []string{"d3.xlarge", "h1.2xlarge", "m5.large"} {
		if _, ok := byName[absent]; ok {
			t.Errorf("%s (no SSD instance storage) is in the catalog", absent)
		}
	}
	// Accelerators come from GpuInfo / FpgaInfo, never from the name.
	if g5 := byName["g5.4xlarge"]; !slices.Equal(g5.Accelerators, []string{"gpu"}) || !g5.SpecialPurpose() {
		t.Errorf("g5.4xlarge accelerators = %v, want [gpu]", g5.Accelerators)
	}
	if f2 := byName["f2.6xlarge"]; !slices.Contains(f2.Accelerators, "fpga") {
		t.Errorf("f2.6xlarge accelerators = %v, want fpga among them", f2.Accelerators)
	}
	if i2 := byName["i2.4xlarge"]; !i2.PreviousGeneration || m6.PreviousGeneration {
		t.Errorf("previous generation: i2.4xlarge %v (want true), m6id.4xlarge %v (want false)", i2.PreviousGeneration, m6.PreviousGeneration)
	}
	if m6.SpecialPurpose() || len(m6.Accelerators) != 0 {
		t.Errorf("m6id.4xlarge is special purpose: %v", m6.Accelerators)
	}
	if z, ok := region.ZoneByName("us-east-1a"); !ok || z.ID != "use1-az6" {
		t.Errorf("us-east-1a = %+v, %v; want use1-az6 (moto's mapping)", z, ok)
	}
	zones := region.Offerings["m6id.4xlarge"]
	if len(zones) < 3 {
		t.Errorf("m6id.4xlarge offered in %v, want at least 3 zones", zones)
	}
	for _, id := range zones {
		if !strings.HasPrefix(id, "use1-az") {
			t.Errorf("m6id.4xlarge offered in %q, not a us-east-1 zone ID", id)
		}
	}
	for name := range region.Offerings {
		if _, ok := byName[name]; !ok {
			t.Errorf("offering for %s, which is not in the catalog", name)
		}
	}
}

// startCatalogMoto starts moto on a free loopback port for the test (stopped by process group at the end)
// and returns its endpoint. A missing python3 or moto fails the test.
func startCatalogMoto(t *testing.T) string {
	t.Helper()
	return acctest.StartMoto(t).URL
}
