package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

var _ function.Function = (*parseSynchronousStandbyNamesFunction)(nil)

// NewParseSynchronousStandbyNamesFunction is the constructor of provider::pgnvme::parse_synchronous_standby_names.
func NewParseSynchronousStandbyNamesFunction() function.Function {
	return &parseSynchronousStandbyNamesFunction{}
}

type parseSynchronousStandbyNamesFunction struct{}

var parsedStandbyNamesType = map[string]attr.Type{
	"method": types.StringType,
	"number": types.Int64Type,
	"names":  types.ListType{ElemType: types.StringType},
}

type parsedStandbyNames struct {
	Method string   `tfsdk:"method"`
	Number int64    `tfsdk:"number"`
	Names  []string `tfsdk:"names"`
}

func (f *parseSynchronousStandbyNamesFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "parse_synchronous_standby_names"
}

func (f *parseSynchronousStandbyNamesFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Parses a synchronous_standby_names value",
		MarkdownDescription: "Parses PostgreSQL's `synchronous_standby_names` into an object `{ method, number, names }`. " +
			"Accepts every form PostgreSQL does: `ANY n (...)`, `FIRST n (...)`, the legacy `n (...)` (read as " +
			"`FIRST n`), a bare list `s1, s2` (read as `FIRST 1`), `*`, and double-quoted names. Keywords may be in " +
			"any case; names keep the case they are written in. An empty value means asynchronous replication and " +
			"returns `{ method = \"\", number = 0, names = [] }`.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "value", MarkdownDescription: "A `synchronous_standby_names` value, e.g. `ANY 1 (s1, s2)`."},
		},
		Return: function.ObjectReturn{AttributeTypes: parsedStandbyNamesType},
	}
}

func (f *parseSynchronousStandbyNamesFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var value string
	resp.Error = function.ConcatFuncErrors(resp.Error, req.Arguments.Get(ctx, &value))
	if resp.Error != nil {
		return
	}
	spec, err := quorum.Parse(value)
	if err != nil {
		resp.Error = function.NewArgumentFuncError(0, err.Error())
		return
	}
	out := parsedStandbyNames{Method: string(spec.Method), Number: int64(spec.Number), Names: nonNil(spec.Names)}
	resp.Error = function.ConcatFuncErrors(resp.Error, resp.Result.Set(ctx, out))
}
