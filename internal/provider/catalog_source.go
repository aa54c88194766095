package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/awsclient"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

const (
	sourceEmbedded = "embedded"
	sourceEC2      = "ec2"
)

// catalogView is one region's instance catalog, from the embedded snapshot or from EC2.
type catalogView struct {
	Types  []catalog.InstanceType
	Region catalog.Region
	Date   string
	Origin string
}

func sourceAttribute() schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "Where instance-type facts come from: `embedded` (default; a snapshot compiled into the " +
			"provider, no credentials needed, see `catalog_date`) or `ec2` (live `DescribeInstanceTypes` and " +
			"`DescribeInstanceTypeOfferings`, read once per region per provider process).",
		Validators: []validator.String{stringvalidator.OneOf(sourceEmbedded, sourceEC2)},
	}
}

func regionAttribute() schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true,
		MarkdownDescription: "AWS region, e.g. `us-east-1`. Defaults to the provider's `region`, then `AWS_REGION`, " +
			"then `AWS_DEFAULT_REGION`. With `source = \"embedded\"` it must be one of the snapshot's regions.",
		Validators: []validator.String{regionName()},
	}
}

// loadCatalog resolves the region and reads the catalog from the chosen source. Diagnostics point at the
// region or source attribute.
func loadCatalog(ctx context.Context, clients *Clients, source, region types.String) (catalogView, diag.Diagnostics) {
	var diags diag.Diagnostics
	name, err := clients.AWS.ResolveRegion(region.ValueString())
	if err != nil {
		diags.AddAttributeError(path.Root("region"), "Missing Region",
			"No AWS region is set. Set `region` here or on the provider, or export AWS_REGION.")
		return catalogView{}, diags
	}
	switch src := source.ValueString(); src {
	case "", sourceEmbedded:
		snap, err := catalog.Embedded()
		if err != nil {
			diags.AddError("Embedded Catalog Unreadable",
				"This is a bug in the provider: the instance catalog compiled into it could not be read. "+
					"Use source = \"ec2\" meanwhile and report the issue.\n\n"+err.Error())
			return catalogView{}, diags
		}
		r, ok := snap.Region(name)
		if !ok {
			diags.AddAttributeError(path.Root("region"), "Region Not In Embedded Catalog",
				fmt.Sprintf("The embedded catalog (%s) covers %s, not %q. Choose one of those regions, or set "+
					"source = \"ec2\" to read the region live from EC2.", snap.Date, strings.Join(snap.RegionNames(), ", "), name))
			return catalogView{}, diags
		}
		return catalogView{Types: snap.Types, Region: r, Date: snap.Date, Origin: snap.Origin}, diags
	case sourceEC2:
		tflog.Info(ctx, "reading the instance catalog from EC2", map[string]any{"region": name})
		types, r, err := clients.AWS.Catalog(ctx, name)
		if err != nil {
			summary, detail := "EC2 Catalog Read Failed", "Reading instance types and offerings from EC2 failed. "+
				"Check credentials, the region and any endpoint override, or use source = \"embedded\".\n\n"+err.Error()
			if errors.Is(err, awsclient.ErrNoRegion) {
				summary = "Missing Region"
			}
			diags.AddAttributeError(path.Root("source"), summary, detail)
			return catalogView{}, diags
		}
		origin := "live: EC2 DescribeInstanceTypes and DescribeInstanceTypeOfferings in " + name
		if ep := clients.AWS.Config().Endpoints.EC2; ep != "" {
			origin += " via " + ep
		}
		return catalogView{Types: types, Region: r, Date: time.Now().UTC().Format(time.DateOnly), Origin: origin}, diags
	default:
		diags.AddAttributeError(path.Root("source"), "Invalid Source",
			fmt.Sprintf("source must be %q or %q, got %q.", sourceEmbedded, sourceEC2, src))
		return catalogView{}, diags
	}
}

// resolveZones turns the zones/zone_ids arguments into zone IDs of the region, with an error on the
// attribute that named an unknown or duplicate zone.
func resolveZones(ctx context.Context, view catalogView, names, ids types.List, namesPath, idsPath path.Path) ([]string, diag.Diagnostics) {
	var diags diag.Diagnostics
	nameList := stringsFromList(ctx, names, &diags)
	idList := stringsFromList(ctx, ids, &diags)
	if diags.HasError() {
		return nil, diags
	}
	resolved, err := view.Region.ResolveZones(nameList, idList)
	if err != nil {
		at := idsPath
		if len(nameList) > 0 {
			at = namesPath
		}
		diags.AddAttributeError(at, "Invalid Zones",
			fmt.Sprintf("The zones given are not usable in %s. List each zone of the region once, by name or by "+
				"zone ID as the error says.\n\n%s", view.Region.Name, err))
		return nil, diags
	}
	return resolved, diags
}

func stringsFromList(ctx context.Context, l types.List, diags *diag.Diagnostics) []string {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	var out []string
	diags.Append(l.ElementsAs(ctx, &out, false)...)
	return out
}

func clientsFrom(data any, diags *diag.Diagnostics) *Clients {
	if data == nil {
		return nil
	}
	c, ok := data.(*Clients)
	if !ok {
		diags.AddError("Unexpected Provider Data",
			fmt.Sprintf("This is a bug in the provider: expected *provider.Clients, got %T. Please report it.", data))
		return nil
	}
	return c
}
