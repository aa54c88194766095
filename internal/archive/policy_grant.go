package archive

import (
	"encoding/json"
	"fmt"
	"strings"
)

// MayGrant reports whether the identity policy doc may allow action on resource (an ARN): whether one of
// its Allow statements names both, by IAM's patterns (* and ?, actions case-insensitive). It errs towards
// yes, since it serves a warning and a wrong warning teaches people to ignore warnings: conditions are
// taken as met, Deny statements are ignored, and a statement with NotAction or NotResource counts as a
// grant. A false answer means no statement of doc could allow the call; the caller's identity may still
// get it elsewhere (another policy of its role, a bucket policy).
func MayGrant(doc, action, resource string) (bool, error) {
	return MayGrantIn(doc, action, resource, nil)
}

// MayGrantIn is MayGrant for a request with the condition keys in keys (lower-case key -> the request's
// value, such as "s3:prefix" for a listing): a statement whose StringEquals or StringLike condition on one
// of those keys matches none of its values cannot allow the call (pgnvme_archive_bucket's node policy
// allows listing its bucket under its own prefix only). Every other condition is still taken as met.
func MayGrantIn(doc, action, resource string, keys map[string]string) (bool, error) {
	var raw struct {
		Statement json.RawMessage
	}
	if err := json.Unmarshal([]byte(doc), &raw); err != nil {
		return false, fmt.Errorf("the policy is not JSON: %w", err)
	}
	var list []map[string]json.RawMessage
	if err := json.Unmarshal(raw.Statement, &list); err != nil {
		var one map[string]json.RawMessage
		if err := json.Unmarshal(raw.Statement, &one); err != nil {
			return false, fmt.Errorf("the policy's Statement is neither a statement nor a list of them")
		}
		list = []map[string]json.RawMessage{one}
	}
	for _, st := range list {
		var effect string
		if err := json.Unmarshal(st["Effect"], &effect); err != nil || effect != "Allow" {
			continue
		}
		if st["NotAction"] != nil || st["NotResource"] != nil {
			return true, nil
		}
		actions, resources := stringOrList(st["Action"]), stringOrList(st["Resource"])
		if matchesAny(actions, action, true) && matchesAny(resources, resource, false) && conditionsMayHold(st["Condition"], keys) {
			return true, nil
		}
	}
	return false, nil
}

// conditionsMayHold reports whether a statement's Condition block may hold for a request with keys: false
// only when a StringEquals or StringLike test of a key in keys matches none of its values.
func conditionsMayHold(raw json.RawMessage, keys map[string]string) bool {
	if raw == nil || len(keys) == 0 {
		return true
	}
	var cond map[string]map[string]json.RawMessage
	if json.Unmarshal(raw, &cond) != nil {
		return true // a block it cannot read is taken as met
	}
	for op, tests := range cond {
		if op != "StringEquals" && op != "StringLike" {
			continue
		}
		for key, values := range tests {
			have, ok := keys[strings.ToLower(key)]
			if !ok {
				continue
			}
			match := false
			for _, v := range stringOrList(values) {
				if op == "StringEquals" && v == have || op == "StringLike" && globMatch(v, have) {
					match = true
					break
				}
			}
			if !match {
				return false
			}
		}
	}
	return true
}

// stringOrList reads a policy element that is one string or a list of strings (nothing for anything else).
func stringOrList(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var list []string
	_ = json.Unmarshal(raw, &list) // anything else names nothing
	return list
}

// matchesAny reports whether one of patterns matches s.
func matchesAny(patterns []string, s string, foldCase bool) bool {
	for _, p := range patterns {
		if foldCase {
			p, s = strings.ToLower(p), strings.ToLower(s)
		}
		if globMatch(p, s) {
			return true
		}
	}
	return false
}

// globMatch matches s against an IAM pattern: * any run of characters, ? any one.
func globMatch(p, s string) bool {
	star, mark := -1, 0
	i, j := 0, 0
	for j < len(s) {
		switch {
		case i < len(p) && (p[i] == '?' || p[i] == s[j]):
			i++
			j++
		case i < len(p) && p[i] == '*':
			star, mark = i, j
			i++
		case star >= 0:
			i = star + 1
			mark++
			j = mark
		default:
			return false
		}
	}
	for i < len(p) && p[i] == '*' {
		i++
	}
	return i == len(p)
}
