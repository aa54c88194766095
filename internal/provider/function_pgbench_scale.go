package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

var _ function.Function = (*pgbenchScaleFunction)(nil)

// NewPgbenchScaleFunction is the constructor of provider::pgnvme::pgbench_scale.
func NewPgbenchScaleFunction() function.Function { return &pgbenchScaleFunction{} }

type pgbenchScaleFunction struct{}

func (f *pgbenchScaleFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "pgbench_scale"
}

func (f *pgbenchScaleFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "pgbench scale for a dataset size",
		MarkdownDescription: fmt.Sprintf("Returns the smallest pgbench scale (`pgbench -i -s`) whose tables and "+
			"indexes take at least `gib` GiB, using %d bytes per scale unit as measured with PostgreSQL 15 "+
			"(fillfactor 100, freshly initialised). At least 1.", pgbench.BytesPerScale),
		Parameters: []function.Parameter{
			function.Float64Parameter{Name: "gib", MarkdownDescription: "Dataset size in GiB, greater than 0."},
		},
		Return: function.Int64Return{},
	}
}

func (f *pgbenchScaleFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var gib float64
	resp.Error = function.ConcatFuncErrors(resp.Error, req.Arguments.Get(ctx, &gib))
	if resp.Error != nil {
		return
	}
	if gib <= 0 {
		resp.Error = function.NewArgumentFuncError(0, fmt.Sprintf("gib must be greater than 0, got %g", gib))
		return
	}
	resp.Error = function.ConcatFuncErrors(resp.Error, resp.Result.Set(ctx, int64(pgbench.ScaleForGiB(gib))))
}
