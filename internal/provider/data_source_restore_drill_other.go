//go:build !linux

package provider

import (
	"context"
	"runtime"

	"github.com/hashicorp/terraform-plugin-framework/datasource"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/cluster/localspec"
)

// restoreDrills is empty where no drill runs (Configure still hands it to the data source).
type restoreDrills struct{}

func newRestoreDrills() *restoreDrills { return &restoreDrills{} }

// Read fails where there is no local platform to run the drill's scratch node (it needs Linux), with
// localspec.SupportedOn's error.
func (d *restoreDrillDataSource) Read(_ context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	why := localspec.SupportedOn(runtime.GOOS)
	resp.Diagnostics.AddError(why.Summary, "pgnvme_restore_drill restores the archive into a scratch node on this machine. "+why.Detail)
}
