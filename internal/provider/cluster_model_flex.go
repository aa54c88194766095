package provider

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

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
// strings, integers, floats, bools, lists of strings, maps of strings and nested objects (into a struct,
// or a pointer to one). A pointer field (*bool, *int, *Limits) stays nil for null, so "not given" and a
// zero value differ. Null and unknown values leave the field's zero value.
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

// expandInto sets the fields of dst (a pointer to a plain struct) from the attributes of the object v: for
// a block that groups some of the plain struct's own fields for the user (restore.archive's are
// cluster.RestoreInput's, backup.retention's cluster.BackupInput's).
func expandInto(ctx context.Context, v types.Object, dst any, diags *diag.Diagnostics) {
	expandValue(ctx, v, reflect.ValueOf(dst).Elem(), diags)
}

func expandValue(ctx context.Context, v attr.Value, f reflect.Value, diags *diag.Diagnostics) {
	if v.IsNull() || v.IsUnknown() {
		return
	}
	bug := func() {
		diags.AddError("Provider Bug", fmt.Sprintf("No conversion from %s to %s; this is a bug in the provider.", v.Type(ctx), f.Type()))
	}
	if f.Kind() == reflect.Pointer && !isList(v) {
		// A value given: the pointer is set (nil stays for null, above).
		if f.IsNil() {
			f.Set(reflect.New(f.Type().Elem()))
		}
		f = f.Elem()
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
	case types.Float64:
		if !f.CanFloat() {
			bug()
			return
		}
		f.SetFloat(v.ValueFloat64())
	case types.Bool:
		if f.Kind() != reflect.Bool {
			bug()
			return
		}
		f.SetBool(v.ValueBool())
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

// groupObject is the attributes ts of src's own fields as the object of a block that groups them for the user
// (backup.retention's are cluster.BackupInput's): null when none is set, as a configuration without the block.
func groupObject(ctx context.Context, src any, ts map[string]attr.Type, diags *diag.Diagnostics) types.Object {
	attrs := flatten(ctx, src, ts, nil, diags)
	for _, v := range attrs {
		if !v.IsNull() {
			o, d := types.ObjectValue(ts, attrs)
			diags.Append(d...)
			return o
		}
	}
	return types.ObjectNull(ts)
}

// isList reports whether v is a list or a map: ElementsAs sets a slice or map field itself.
func isList(v attr.Value) bool {
	switch v.(type) {
	case types.List, types.Map:
		return true
	}
	return false
}

// flatten is src (a plain struct) as the attributes ts of a block's inputs, by the same names as expand:
// "", 0, an empty list or map, a nil pointer and a zero nested struct are null, as a configuration that
// leaves them out (a bool is always known; a pointer to a zero value is that value), as are attributes src
// has no field for. names maps attribute names to src's field names where they differ.
func flatten(ctx context.Context, src any, ts map[string]attr.Type, names map[string]string, diags *diag.Diagnostics) map[string]attr.Value {
	return flattenAttrs(ctx, src, ts, names, true, diags)
}

// flattenReport is src (a plain struct a platform reports) as the attributes ts, by the same names: every
// value as it is (0 is 0, "" is ""), but a zero time is null (not known), as is a nil pointer.
func flattenReport(ctx context.Context, src any, ts map[string]attr.Type, diags *diag.Diagnostics) map[string]attr.Value {
	return flattenAttrs(ctx, src, ts, nil, false, diags)
}

var timeType = reflect.TypeFor[time.Time]()

func flattenAttrs(ctx context.Context, src any, ts map[string]attr.Type, names map[string]string, zeroNull bool, diags *diag.Diagnostics) map[string]attr.Value {
	sv := reflect.Indirect(reflect.ValueOf(src))
	out := nullAttrs(ts)
	for name, t := range ts {
		var f reflect.Value
		if n, ok := names[name]; ok {
			f = sv.FieldByName(n)
		} else {
			f = fieldOfAttr(sv, name)
		}
		if !f.IsValid() || f.IsZero() && (zeroNull && f.Kind() != reflect.Bool || f.Type() == timeType || f.Kind() == reflect.Pointer) {
			continue
		}
		out[name] = flattenValue(ctx, f, t, zeroNull, diags)
	}
	return out
}

func flattenValue(ctx context.Context, f reflect.Value, t attr.Type, zeroNull bool, diags *diag.Diagnostics) attr.Value {
	if f.Kind() == reflect.Pointer {
		if f.IsNil() {
			return nullOf(t)
		}
		f = f.Elem()
	}
	switch t := t.(type) {
	case types.ObjectType:
		obj, d := types.ObjectValue(t.AttrTypes, flattenAttrs(ctx, f.Interface(), t.AttrTypes, nil, zeroNull, diags))
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
	case t == types.StringType && f.Type() == timeType:
		return types.StringValue(f.Interface().(time.Time).UTC().Format(time.RFC3339Nano))
	case t == types.StringType && f.Kind() == reflect.String:
		return types.StringValue(f.String())
	case t == types.Int64Type && f.CanInt():
		return types.Int64Value(f.Int())
	case t == types.Float64Type && f.CanFloat():
		return types.Float64Value(f.Float())
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
