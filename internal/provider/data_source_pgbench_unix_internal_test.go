//go:build unix

package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster"
)

// configured is the data given to resources and data sources by the provider's Configure (with an empty
// provider block): the dependencies the data sources then take from it.
func configured(t *testing.T) *Clients {
	t.Helper()
	ctx := context.Background()
	p := NewWithPlatforms("test", map[cluster.Platform]ClusterPlatform{cluster.PlatformLocal: NewFakePlatform()})()
	var sr provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &sr)
	var cr provider.ConfigureResponse
	p.Configure(ctx, provider.ConfigureRequest{Config: tfsdk.Config{Schema: sr.Schema, Raw: objectOf(sr.Schema.Type().TerraformType(ctx), nil)}}, &cr)
	c, ok := cr.DataSourceData.(*Clients)
	if cr.Diagnostics.HasError() || !ok || c.Drills == nil || c.Bench == nil {
		t.Fatalf("Configure: %v; data %#v", cr.Diagnostics, cr.DataSourceData)
	}
	return c
}

// objectOf is an object of type typ with the attributes set, every other one null.
func objectOf(typ tftypes.Type, set map[string]tftypes.Value) tftypes.Value {
	ot := typ.(tftypes.Object)
	vals := map[string]tftypes.Value{}
	for name, at := range ot.AttributeTypes {
		vals[name] = tftypes.NewValue(at, nil)
		if v, ok := set[name]; ok {
			vals[name] = v
		}
	}
	return tftypes.NewValue(typ, vals)
}

// pgnvme_pgbench runs pgbench with what Configure handed it: a finder that finds nothing is what the read
// reports, before any connection.
func TestPgbenchDependenciesFromConfigure(t *testing.T) {
	ctx := context.Background()
	c := configured(t)
	var asked []string
	c.Bench.find = func(name, explicit string) (string, error) {
		asked = append(asked, name+" "+explicit)
		return "", errors.New("tf-acc fake finder: no pgbench")
	}
	ds := NewPgbenchDataSource().(*pgbenchDataSource)
	var cr datasource.ConfigureResponse
	ds.Configure(ctx, datasource.ConfigureRequest{ProviderData: c}, &cr)
	var sr datasource.SchemaResponse
	ds.Schema(ctx, datasource.SchemaRequest{}, &sr)
	typ := sr.Schema.Type().TerraformType(ctx).(tftypes.Object)
	server := objectOf(typ.AttributeTypes["server"], map[string]tftypes.Value{"host": tftypes.NewValue(tftypes.String, "127.0.0.1")})
	config := objectOf(typ, map[string]tftypes.Value{"server": server, "pgbench_path": tftypes.NewValue(tftypes.String, "/nowhere/pgbench")})
	resp := datasource.ReadResponse{State: tfsdk.State{Schema: sr.Schema}}
	ds.Read(ctx, datasource.ReadRequest{Config: tfsdk.Config{Schema: sr.Schema, Raw: config}}, &resp)
	if len(asked) != 1 || asked[0] != "pgbench /nowhere/pgbench" || !strings.Contains(diagText(resp.Diagnostics), "tf-acc fake finder: no pgbench") {
		t.Errorf("finder asked %q; diagnostics %v", asked, resp.Diagnostics)
	}
}

func diagText(ds diag.Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.Summary() + ": " + d.Detail() + "\n")
	}
	return b.String()
}
