package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// fractionValidator accepts a share above 0 and at most 1, and says so in the user's terms when the value
// looks like a percentage (75 for 0.75) instead of the generic "between 0.000000 and 1.000000".
type fractionValidator struct{ example float64 }

var _ validator.Float64 = fractionValidator{}

func (v fractionValidator) Description(context.Context) string {
	return fmt.Sprintf("a fraction above 0 and at most 1, such as %g for %g%%", v.example, 100*v.example)
}

func (v fractionValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v fractionValidator) ValidateFloat64(_ context.Context, req validator.Float64Request, resp *validator.Float64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	x := req.ConfigValue.ValueFloat64()
	if x > 0 && x <= 1 {
		return
	}
	detail := fmt.Sprintf("%s is %g; it is a fraction above 0 and at most 1, such as %g for %g%%.", req.Path, x, v.example, 100*v.example)
	if x >= 5 && x <= 100 { // a percentage, such as 75
		detail += fmt.Sprintf(" For %g%%, write %g.", x, x/100)
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Invalid Fraction", detail)
}
