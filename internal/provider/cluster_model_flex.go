package provider

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// Conversions between a model (a struct of framework values with tfsdk tags) and a plain struct of a pure
// package, by field name, as terraform-provider-aws's internal/framework/flex: a field added to both is
// converted with no list of keys to keep. A model field is matched with the plain field of the same Go
// name (promoted fields of embedded structs too, the outer first); a nested object's attributes with the
// plain struct's fields whose names, lower case, are the attribute's without underscores (ttl: TTL,
// loop_wait: LoopWait). Model fields without a plain field are the glue's own (outputs).

// expand sets the fields of dst (a pointer to a plain struct) from model (a struct of framework values):
// strings, integers, bools (a *bool is nil for null), lists of strings, maps of strings and nested objects.
// Null and unknown values leave the field's zero value.
func expand(ctx context.Context, model any, dst any, diags *diag.Diagnostics) {
	mv, dv := reflect.ValueOf(model), reflect.ValueOf(dst).Elem()
	for i := range mv.NumField() {
		f := dv.FieldByName(mv.Type().Field(i).Name)
		if !f.IsValid() {
			continue
		}
		v, ok := mv.Field(i).Interface().(attr.Value)
		if !ok {
			diags.AddError("Provider Bug", fmt.Sprintf("The model field %s is not a framework value; this is a bug in the provider.", mv.Type().Field(i).Name))
			return
		}
		expandValue(ctx, v, f, diags)
	}
}

func expandValue(ctx context.Context, v attr.Value, f reflect.Value, diags *diag.Diagnostics) {
	if v.IsNull() || v.IsUnknown() {
		return
	}
	bug := func() {
		diags.AddError("Provider Bug", fmt.Sprintf("No conversion from %s to %s; this is a bug in the provider.", v.Type(ctx), f.Type()))
	}
	switch v := v.(type) {
	case types.String:
		if f.Kind() != reflect.String {
			bug()
			return
		}
		f.SetString(v.ValueString())
	case types.Int64:
		if !f.CanInt() {
			bug()
			return
		}
		f.SetInt(v.ValueInt64())
	case types.Bool:
		switch {
		case f.Kind() == reflect.Bool:
			f.SetBool(v.ValueBool())
		case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Bool:
			b := v.ValueBool()
			f.Set(reflect.ValueOf(&b))
		default:
			bug()
		}
	case types.List:
		diags.Append(v.ElementsAs(ctx, f.Addr().Interface(), false)...)
	case types.Map:
		diags.Append(v.ElementsAs(ctx, f.Addr().Interface(), false)...)
	case types.Object:
		if f.Kind() != reflect.Struct {
			bug()
			return
		}
		for name, a := range v.Attributes() {
			if sf := fieldOfAttr(f, name); sf.IsValid() {
				expandValue(ctx, a, sf, diags)
			}
		}
	default:
		bug()
	}
}

// flatten is src (a plain struct) as the attributes ts, by the same names as expand: "", 0, an empty list
// or map and a zero nested struct are null (a bool is always known), as are attributes src has no field
// for. names maps attribute names to src's field names where they differ.
func flatten(ctx context.Context, src any, ts map[string]attr.Type, names map[string]string, diags *diag.Diagnostics) map[string]attr.Value {
	sv := reflect.Indirect(reflect.ValueOf(src))
	out := nullAttrs(ts)
	for name, t := range ts {
		var f reflect.Value
		if n, ok := names[name]; ok {
			f = sv.FieldByName(n)
		} else {
			f = fieldOfAttr(sv, name)
		}
		if f.IsValid() && (!f.IsZero() || f.Kind() == reflect.Bool) {
			out[name] = flattenValue(ctx, f, t, diags)
		}
	}
	return out
}

func flattenValue(ctx context.Context, f reflect.Value, t attr.Type, diags *diag.Diagnostics) attr.Value {
	switch t := t.(type) {
	case types.ObjectType:
		obj, d := types.ObjectValue(t.AttrTypes, flatten(ctx, f.Interface(), t.AttrTypes, nil, diags))
		diags.Append(d...)
		return obj
	case types.ListType:
		l, d := types.ListValueFrom(ctx, t.ElemType, f.Interface())
		diags.Append(d...)
		return l
	case types.MapType:
		m, d := types.MapValueFrom(ctx, t.ElemType, f.Interface())
		diags.Append(d...)
		return m
	}
	switch {
	case t == types.StringType && f.Kind() == reflect.String:
		return types.StringValue(f.String())
	case t == types.Int64Type && f.CanInt():
		return types.Int64Value(f.Int())
	case t == types.BoolType && f.Kind() == reflect.Bool:
		return types.BoolValue(f.Bool())
	}
	diags.AddError("Provider Bug", fmt.Sprintf("No conversion from %s to %s; this is a bug in the provider.", f.Type(), t))
	return nullOf(t)
}

// fieldOfAttr is the field of struct v for the attribute name (maximum_lag_on_failover:
// MaximumLagOnFailover), invalid when there is none.
func fieldOfAttr(v reflect.Value, name string) reflect.Value {
	want := strings.ReplaceAll(name, "_", "")
	return v.FieldByNameFunc(func(n string) bool { return strings.ToLower(n) == want })
}

// hasUnknown reports whether v is unknown or holds an unknown value (in an object, list or map).
func hasUnknown(v attr.Value) bool {
	if v.IsUnknown() {
		return true
	}
	var elems []attr.Value
	switch v := v.(type) {
	case types.Object:
		elems = slices.Collect(maps.Values(v.Attributes()))
	case types.List:
		elems = v.Elements()
	case types.Map:
		elems = slices.Collect(maps.Values(v.Elements()))
	}
	return slices.ContainsFunc(elems, hasUnknown)
}

// inputUnknown reports whether a block's object v is unknown or holds an unknown value in an attribute
// other than its outputs (the platform reports those).
func inputUnknown(v types.Object, outputs map[string]bool) bool {
	if v.IsUnknown() {
		return true
	}
	for name, a := range v.Attributes() {
		if !outputs[name] && hasUnknown(a) {
			return true
		}
	}
	return false
}
