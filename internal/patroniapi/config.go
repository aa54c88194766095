package patroniapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// ownedMaps are the maps of the dynamic configuration whose every key the caller owns: a key the caller
// no longer wants is removed (set to null in the patch). Elsewhere keys the caller does not name (Patroni's
// own, such as slots or member_slots_ttl) are left as they are.
var ownedMaps = [][]string{{"postgresql", "parameters"}}

// ConfigPatch is the body of PATCH /config that turns current (GET /config) into desired: every key of
// desired whose value differs, nested maps merged as Patroni merges them, and null for each key of an owned
// map (postgresql.parameters) that desired no longer has. changes describes each change as
// "path: old -> new" in key order, for plans and logs (a list by its length). Scalars are compared by
// their text, so "100" and 100 are equal (Patroni's YAML and JSON writers differ there); lists element by
// element. patch is nil when nothing differs.
func ConfigPatch(desired, current map[string]any) (patch map[string]any, changes []string) {
	return configPatch(desired, current, nil)
}

func configPatch(desired, current map[string]any, path []string) (map[string]any, []string) {
	out := map[string]any{}
	var changes []string
	keys := slices.Sorted(maps.Keys(desired))
	owned := slices.ContainsFunc(ownedMaps, func(p []string) bool { return slices.Equal(p, path) })
	if owned {
		for k := range current {
			if _, ok := desired[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
	}
	for _, k := range keys {
		p := append(slices.Clone(path), k)
		want, wanted := desired[k]
		have, had := current[k]
		if !wanted {
			out[k] = nil
			changes = append(changes, fmt.Sprintf("%s: %s -> (removed)", dotted(p), describe(have)))
			continue
		}
		if wm, ok := want.(map[string]any); ok {
			hm, _ := have.(map[string]any)
			if sub, ch := configPatch(wm, hm, p); sub != nil {
				out[k] = sub
				changes = append(changes, ch...)
			}
			continue
		}
		if had && same(have, want) {
			continue
		}
		out[k] = want
		old := "(unset)"
		if had {
			old = describe(have)
		}
		changes = append(changes, fmt.Sprintf("%s: %s -> %s", dotted(p), old, describe(want)))
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, changes
}

// same reports whether two values are the same: scalars by their text, lists element by element.
func same(a, b any) bool {
	la, aList := a.([]any)
	lb, bList := b.([]any)
	if aList || bList {
		return aList && bList && slices.EqualFunc(la, lb, same)
	}
	return text(a) == text(b)
}

// describe is a value for a plan line: a scalar's text, a list by its length (pg_hba's lines).
func describe(v any) string {
	if l, ok := v.([]any); ok {
		return fmt.Sprintf("[%d lines]", len(l))
	}
	return text(v)
}

// text is a scalar's text: strings as they are, numbers without exponent or trailing zeros, booleans and
// anything else as JSON.
func text(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case json.Number:
		return v.String()
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

func dotted(path []string) string {
	s := ""
	for i, p := range path {
		if i > 0 {
			s += "."
		}
		s += p
	}
	return s
}
