package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// pgnvme_restore_drill runs its scratch node with what Configure handed it: the Manager for the user it
// names, and the port.
func TestRestoreDrillDependenciesFromConfigure(t *testing.T) {
	ctx := context.Background()
	c := configured(t)
	var users []string
	c.Drills.manager = func(runAsUser string) (drillManager, error) {
		users = append(users, runAsUser)
		return nil, errors.New("tf-acc fake manager: no PostgreSQL here")
	}
	ds := NewRestoreDrillDataSource().(*restoreDrillDataSource)
	var cr datasource.ConfigureResponse
	ds.Configure(ctx, datasource.ConfigureRequest{ProviderData: c}, &cr)
	var sr datasource.SchemaResponse
	ds.Schema(ctx, datasource.SchemaRequest{}, &sr)
	typ := sr.Schema.Type().TerraformType(ctx).(tftypes.Object)
	archive := objectOf(typ.AttributeTypes["archive"], map[string]tftypes.Value{
		"walg_env": tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, map[string]tftypes.Value{"WALG_S3_PREFIX": tftypes.NewValue(tftypes.String, "s3://tf-acc/p")}),
	})
	config := objectOf(typ, map[string]tftypes.Value{"archive": archive, "run_as_user": tftypes.NewValue(tftypes.String, "tf-acc-user")})
	resp := datasource.ReadResponse{State: tfsdk.State{Schema: sr.Schema}}
	ds.Read(ctx, datasource.ReadRequest{Config: tfsdk.Config{Schema: sr.Schema, Raw: config}}, &resp)
	if got := diagText(resp.Diagnostics); len(users) != 1 || users[0] != "tf-acc-user" || !strings.Contains(got, "Restore Drill Not Possible Here") || !strings.Contains(got, "tf-acc fake manager") {
		t.Errorf("manager asked for %q; diagnostics %s", users, got)
	}
}
