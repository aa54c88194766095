package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/quorum"
)

var _ function.Function = (*synchronousStandbyNamesFunction)(nil)

// NewSynchronousStandbyNamesFunction is the constructor of provider::pgnvme::synchronous_standby_names.
func NewSynchronousStandbyNamesFunction() function.Function {
	return &synchronousStandbyNamesFunction{}
}

type synchronousStandbyNamesFunction struct{}

func (f *synchronousStandbyNamesFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "synchronous_standby_names"
}

func (f *synchronousStandbyNamesFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "Renders a synchronous_standby_names value",
		MarkdownDescription: "Renders PostgreSQL's `synchronous_standby_names` from a method, a number and standby " +
			"names: `synchronous_standby_names(\"any\", 1, [\"s1\", \"s2\"])` is `ANY 1 (s1, s2)`. Names that are not " +
			"plain lower-case identifiers (spaces, quotes, upper case, the words ANY and FIRST) are double-quoted " +
			"with embedded quotes doubled. PostgreSQL matches names against each standby's `application_name`, " +
			"case-insensitively. Errors when `number` is below 1 or above the number of names, or when a name is " +
			"empty, longer than 63 bytes or repeated.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "method", MarkdownDescription: "`any` (quorum: a commit waits for any `number` standbys) or `first` (priority: the first `number` connected standbys in list order)."},
			function.Int64Parameter{Name: "number", MarkdownDescription: "How many standbys confirm each commit; 1 to the number of names."},
			function.ListParameter{Name: "names", ElementType: types.StringType, MarkdownDescription: "Standby `application_name` values, or `*` for any standby."},
		},
		Return: function.StringReturn{},
	}
}

func (f *synchronousStandbyNamesFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var method string
	var number int64
	var names []string
	resp.Error = function.ConcatFuncErrors(resp.Error, req.Arguments.Get(ctx, &method, &number, &names))
	if resp.Error != nil {
		return
	}
	value, err := quorum.Format(quorum.Spec{Method: quorum.Method(method), Number: int(number), Names: names})
	if err != nil {
		resp.Error = function.NewFuncError(err.Error())
		return
	}
	resp.Error = function.ConcatFuncErrors(resp.Error, resp.Result.Set(ctx, value))
}
