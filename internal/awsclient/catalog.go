package awsclient

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

// EC2CatalogAPI is the part of *ec2.Client the catalog needs.
type EC2CatalogAPI interface {
	DescribeInstanceTypes(ctx context.Context, params *ec2.DescribeInstanceTypesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstanceTypeOfferings(ctx context.Context, params *ec2.DescribeInstanceTypeOfferingsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeAvailabilityZones(ctx context.Context, params *ec2.DescribeAvailabilityZonesInput, optFns ...func(*ec2.Options)) (*ec2.DescribeAvailabilityZonesOutput, error)
}

var _ EC2CatalogAPI = (*ec2.Client)(nil)

// Page sizes: the largest each API accepts.
const (
	instanceTypesPageSize     = 100
	instanceOfferingsPageSize = 1000
)

// FetchCatalog reads the instance types with SSD instance storage of one
// region and where they are offered.
//
// It calls DescribeInstanceTypes with the server-side filter
// instance-storage-supported=true, DescribeInstanceTypeOfferings by
// availability-zone-id (both paginated until the last page), and
// DescribeAvailabilityZones for the zone name<->ID mapping. Only zones of type
// availability-zone in state available that need no opt-in or are opted in
// are kept (no Local or Wavelength Zones). Types go through
// [catalog.Classify]; the region's offerings list only those types, and
// only in the kept zones. Types are returned sorted by name. api must be a
// client for region (the region is not set per call).
func FetchCatalog(ctx context.Context, api EC2CatalogAPI, region string) ([]catalog.InstanceType, catalog.Region, error) {
	types, err := fetchInstanceTypes(ctx, api)
	if err != nil {
		return nil, catalog.Region{}, fmt.Errorf("describing instance types in %s: %w", region, err)
	}
	zones, err := fetchZones(ctx, api, region)
	if err != nil {
		return nil, catalog.Region{}, fmt.Errorf("describing availability zones in %s: %w", region, err)
	}
	known := make(map[string]bool, len(types))
	for _, t := range types {
		known[t.Name] = true
	}
	zoneIDs := make(map[string]bool, len(zones))
	for _, z := range zones {
		zoneIDs[z.ID] = true
	}
	offerings, err := fetchOfferings(ctx, api, func(typeName, zoneID string) bool {
		return known[typeName] && zoneIDs[zoneID]
	})
	if err != nil {
		return nil, catalog.Region{}, fmt.Errorf("describing instance type offerings in %s: %w", region, err)
	}
	return types, catalog.Region{Name: region, Zones: zones, Offerings: offerings}, nil
}

func fetchInstanceTypes(ctx context.Context, api EC2CatalogAPI) ([]catalog.InstanceType, error) {
	in := &ec2.DescribeInstanceTypesInput{
		Filters: []ec2types.Filter{{
			Name:   aws.String("instance-storage-supported"),
			Values: []string{"true"},
		}},
		MaxResults: aws.Int32(instanceTypesPageSize),
	}
	p := ec2.NewDescribeInstanceTypesPaginator(api, in, func(o *ec2.DescribeInstanceTypesPaginatorOptions) {
		o.StopOnDuplicateToken = true
	})
	var out []catalog.InstanceType
	seen := map[string]bool{}
	for page := 1; p.HasMorePages(); page++ {
		res, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("page %d: %w", page, err)
		}
		for _, info := range res.InstanceTypes {
			t, ok := catalog.Classify(rawType(info))
			if !ok || seen[t.Name] {
				continue
			}
			seen[t.Name] = true
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b catalog.InstanceType) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// rawType copies what the catalog needs out of an SDK record.
func rawType(info ec2types.InstanceTypeInfo) catalog.RawType {
	r := catalog.RawType{
		Name:               string(info.InstanceType),
		StorageSupported:   aws.ToBool(info.InstanceStorageSupported),
		PreviousGeneration: !aws.ToBool(info.CurrentGeneration),
	}
	if info.VCpuInfo != nil {
		r.VCPUs = int(aws.ToInt32(info.VCpuInfo.DefaultVCpus))
	}
	if info.MemoryInfo != nil {
		r.MemoryMiB = aws.ToInt64(info.MemoryInfo.SizeInMiB)
	}
	if s := info.InstanceStorageInfo; s != nil {
		r.TotalGB = aws.ToInt64(s.TotalSizeInGB)
		r.NVMeSupport = string(s.NvmeSupport)
		for _, d := range s.Disks {
			r.Disks = append(r.Disks, catalog.RawDisk{
				Count:  int(aws.ToInt32(d.Count)),
				SizeGB: aws.ToInt64(d.SizeInGB),
				Type:   string(d.Type),
			})
		}
	}
	if info.ProcessorInfo != nil {
		for _, a := range info.ProcessorInfo.SupportedArchitectures {
			r.Architectures = append(r.Architectures, string(a))
		}
	}
	if info.NetworkInfo != nil {
		r.NetworkPerformance = aws.ToString(info.NetworkInfo.NetworkPerformance)
	}
	for kind, present := range map[string]bool{
		catalog.AcceleratorGPU:       info.GpuInfo != nil,
		catalog.AcceleratorFPGA:      info.FpgaInfo != nil,
		catalog.AcceleratorInference: info.InferenceAcceleratorInfo != nil,
		catalog.AcceleratorNeuron:    info.NeuronInfo != nil,
		catalog.AcceleratorMedia:     info.MediaAcceleratorInfo != nil,
	} {
		if present {
			r.Accelerators = append(r.Accelerators, kind)
		}
	}
	return r
}

func fetchZones(ctx context.Context, api EC2CatalogAPI, region string) ([]catalog.Zone, error) {
	res, err := api.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{
		AllAvailabilityZones: aws.Bool(false),
		Filters: []ec2types.Filter{
			{Name: aws.String("zone-type"), Values: []string{"availability-zone"}},
			{Name: aws.String("state"), Values: []string{string(ec2types.AvailabilityZoneStateAvailable)}},
		},
	})
	if err != nil {
		return nil, err
	}
	zones := []catalog.Zone{}
	for _, z := range res.AvailabilityZones {
		if r := aws.ToString(z.RegionName); r != "" && r != region {
			return nil, fmt.Errorf("zone %s is in region %s: the EC2 client is not configured for %s", aws.ToString(z.ZoneName), r, region)
		}
		// Checked again here: the filters are not honoured by every endpoint.
		switch {
		case aws.ToString(z.ZoneType) != "" && aws.ToString(z.ZoneType) != "availability-zone",
			z.State != "" && z.State != ec2types.AvailabilityZoneStateAvailable,
			z.OptInStatus == ec2types.AvailabilityZoneOptInStatusNotOptedIn,
			aws.ToString(z.ZoneId) == "" || aws.ToString(z.ZoneName) == "":
			continue
		}
		zones = append(zones, catalog.Zone{Name: aws.ToString(z.ZoneName), ID: aws.ToString(z.ZoneId)})
	}
	slices.SortFunc(zones, func(a, b catalog.Zone) int { return strings.Compare(a.ID, b.ID) })
	zones = slices.CompactFunc(zones, func(a, b catalog.Zone) bool { return a.ID == b.ID })
	return zones, nil
}

// fetchOfferings returns instance type -> sorted zone IDs for the offerings
// keep accepts.
func fetchOfferings(ctx context.Context, api EC2CatalogAPI, keep func(typeName, zoneID string) bool) (map[string][]string, error) {
	p := ec2.NewDescribeInstanceTypeOfferingsPaginator(api, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZoneId,
		MaxResults:   aws.Int32(instanceOfferingsPageSize),
	}, func(o *ec2.DescribeInstanceTypeOfferingsPaginatorOptions) {
		o.StopOnDuplicateToken = true
	})
	out := map[string][]string{}
	for page := 1; p.HasMorePages(); page++ {
		res, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("page %d: %w", page, err)
		}
		for _, o := range res.InstanceTypeOfferings {
			if o.LocationType != "" && o.LocationType != ec2types.LocationTypeAvailabilityZoneId {
				continue
			}
			name, zone := string(o.InstanceType), aws.ToString(o.Location)
			if keep(name, zone) && !slices.Contains(out[name], zone) {
				out[name] = append(out[name], zone)
			}
		}
	}
	for _, ids := range out {
		slices.Sort(ids)
	}
	return out, nil
}
