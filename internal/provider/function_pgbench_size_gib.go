package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/function"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/pgbench"
)

var _ function.Function = (*pgbenchSizeGiBFunction)(nil)

// NewPgbenchSizeGiBFunction is the constructor of provider::pgnvme::pgbench_size_gib.
func NewPgbenchSizeGiBFunction() function.Function { return &pgbenchSizeGiBFunction{} }

type pgbenchSizeGiBFunction struct{}

func (f *pgbenchSizeGiBFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "pgbench_size_gib"
}

func (f *pgbenchSizeGiBFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Dataset size of a pgbench scale",
		MarkdownDescription: fmt.Sprintf("Returns the size in GiB of the tables and indexes `pgbench -i -s scale` "+
			"creates, using %d bytes per scale unit as measured with PostgreSQL 15 (fillfactor 100, freshly "+
			"initialised; updates add bloat on top).", pgbench.BytesPerScale),
		Parameters: []function.Parameter{
			function.Int64Parameter{Name: "scale", MarkdownDescription: "pgbench scale factor, at least 1."},
		},
		Return: function.Float64Return{},
	}
}

func (f *pgbenchSizeGiBFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var scale int64
	resp.Error = function.ConcatFuncErrors(resp.Error, req.Arguments.Get(ctx, &scale))
	if resp.Error != nil {
		return
	}
	if scale < 1 {
		resp.Error = function.NewArgumentFuncError(0, fmt.Sprintf("scale must be at least 1, got %d", scale))
		return
	}
	resp.Error = function.ConcatFuncErrors(resp.Error, resp.Result.Set(ctx, round(pgbench.SizeGiB(int(scale)), 3)))
}
