package provider

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// regionPattern matches AWS region names such as us-east-1, eu-central-2, us-gov-west-1, ap-southeast-5.
var regionPattern = regexp.MustCompile(`^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]{1,2}$`)

type regionNameValidator struct{}

func regionName() validator.String { return regionNameValidator{} }

func (regionNameValidator) Description(context.Context) string {
	return "must be an AWS region name such as us-east-1"
}

func (v regionNameValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (regionNameValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if v := req.ConfigValue.ValueString(); !regionPattern.MatchString(v) {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Region",
			fmt.Sprintf("%q is not an AWS region name. Use a name such as us-east-1 or eu-west-1 (not a zone such as us-east-1a).", v))
	}
}

type endpointURLValidator struct{}

func endpointURL() validator.String { return endpointURLValidator{} }

func (endpointURLValidator) Description(context.Context) string {
	return "must be an absolute http or https URL"
}

func (v endpointURLValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (endpointURLValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	v := req.ConfigValue.ValueString()
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Endpoint",
			fmt.Sprintf("%q is not an absolute URL. Give scheme and host, e.g. http://127.0.0.1:5000.", v))
	}
}

func regexpMust(expr string) *regexp.Regexp { return regexp.MustCompile(expr) }

// known reports whether a configuration value is set and known at this point of the plan.
func known(v attr.Value) bool { return !v.IsNull() && !v.IsUnknown() }

// round keeps d decimal places, so state shows 884.76 rather than 884.7630023956299.
func round(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}

// nonNil returns an empty slice for nil, so Terraform shows [] rather than null for an empty list.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// pureStringValidator checks a string with a rule of a pure package, such as cluster.CheckNodeName.
// summary is the diagnostic's title, such as "Invalid Node Name".
func pureStringValidator(summary string, check func(string) error) validator.String {
	return pureStringCheck{summary: summary, check: check}
}

type pureStringCheck struct {
	summary string
	check   func(string) error
}

func (v pureStringCheck) Description(context.Context) string { return "must pass: " + v.summary }

func (v pureStringCheck) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v pureStringCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if !known(req.ConfigValue) {
		return
	}
	if err := v.check(req.ConfigValue.ValueString()); err != nil {
		msg := err.Error()
		resp.Diagnostics.AddAttributeError(req.Path, v.summary, fmt.Sprintf("%s%s.", strings.ToUpper(msg[:1]), msg[1:]))
	}
}

// requiredInBlockValidator is Required for an attribute of a single nested block: the framework's own
// Required also fires when the block is absent (terraform-plugin-framework#740), so the attribute is Optional
// and this asks for it only where its block is written. blockRequired: the block itself must be written
// (requiredBlock), so the error does not offer to remove it.
type requiredInBlockValidator struct{ blockRequired bool }

func requiredInBlock() requiredInBlockValidator { return requiredInBlockValidator{} }

// requiredInRequiredBlock is requiredInBlock for an attribute of a block that requiredBlock asks for.
func requiredInRequiredBlock() requiredInBlockValidator {
	return requiredInBlockValidator{blockRequired: true}
}

func (requiredInBlockValidator) Description(context.Context) string {
	return "required in its block"
}

func (v requiredInBlockValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v requiredInBlockValidator) validate(ctx context.Context, value attr.Value, p path.Path, config tfsdk.Config, diags *diag.Diagnostics) {
	if !value.IsNull() {
		return
	}
	block := p.ParentPath()
	var parent types.Object
	diags.Append(config.GetAttribute(ctx, block, &parent)...)
	if parent.IsNull() || parent.IsUnknown() {
		return
	}
	todo := "Set it, or remove the block."
	if v.blockRequired {
		todo = "Set it."
	}
	diags.AddAttributeError(p, "Missing Required Argument",
		fmt.Sprintf("The argument %q is required in the %s block, but no definition was found. %s", p.Steps()[len(p.Steps())-1], block, todo))
}

func (v requiredInBlockValidator) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	v.validate(ctx, req.ConfigValue, req.Path, req.Config, &resp.Diagnostics)
}

func (v requiredInBlockValidator) ValidateMap(ctx context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	v.validate(ctx, req.ConfigValue, req.Path, req.Config, &resp.Diagnostics)
}

func (v requiredInBlockValidator) ValidateInt64(ctx context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	v.validate(ctx, req.ConfigValue, req.Path, req.Config, &resp.Diagnostics)
}

// requiredBlockValidator is Required for a single nested block, which cannot be Required itself: the block
// is null when it is not written. example shows the block written, for the error.
type requiredBlockValidator struct{ example string }

func requiredBlock(example string) requiredBlockValidator {
	return requiredBlockValidator{example: example}
}

func (requiredBlockValidator) Description(context.Context) string { return "required" }

func (v requiredBlockValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v requiredBlockValidator) ValidateObject(_ context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if !req.ConfigValue.IsNull() {
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Missing Required Block",
		fmt.Sprintf("The block %q is required, but none was written. Add one, such as:\n\n%s", req.Path, v.example))
}
