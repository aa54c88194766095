package bootstrap

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// yamlMap is a YAML mapping whose keys keep their order.
type yamlMap []yamlItem

// yamlItem is one key of a yamlMap. Its value is a string (always written
// double-quoted, so that YAML 1.1 readers such as PyYAML never take "on" or
// "16" for a boolean or a number), an int, an int64, a bool, a yamlMap, or a
// []any of those.
type yamlItem struct {
	key   string
	value any
}

// plainKey is a key written without quotes.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// yamlString quotes s as a YAML double-quoted scalar. Go's quoting escapes
// (\", \\, \n, \t, \xXX, \uXXXX, ...) are all YAML escapes too.
func yamlString(s string) string {
	return strconv.Quote(s)
}

// yamlKey writes a mapping key: plain when that is unambiguous, else quoted.
func yamlKey(k string) string {
	switch strings.ToLower(k) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null", "~":
		return yamlString(k)
	}
	if plainKey.MatchString(k) {
		return k
	}
	return yamlString(k)
}

// yamlScalar writes a scalar value.
func yamlScalar(v any) string {
	switch v := v.(type) {
	case string:
		return yamlString(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case bool:
		return strconv.FormatBool(v)
	default:
		panic(fmt.Sprintf("provider bug: no YAML form for %T", v))
	}
}

// String writes m as a block-style YAML document (without "---").
func (m yamlMap) String() string {
	var b strings.Builder
	writeYAMLMap(&b, m, 0)
	return b.String()
}

func writeYAMLMap(b *strings.Builder, m yamlMap, indent int) {
	pad := strings.Repeat(" ", indent)
	for _, it := range m {
		b.WriteString(pad)
		b.WriteString(yamlKey(it.key))
		b.WriteString(":")
		switch v := it.value.(type) {
		case yamlMap:
			if len(v) == 0 {
				b.WriteString(" {}\n")
				continue
			}
			b.WriteString("\n")
			writeYAMLMap(b, v, indent+2)
		case []any:
			if len(v) == 0 {
				b.WriteString(" []\n")
				continue
			}
			b.WriteString("\n")
			writeYAMLList(b, v, indent)
		default:
			b.WriteString(" ")
			b.WriteString(yamlScalar(v))
			b.WriteString("\n")
		}
	}
}

// writeYAMLList writes a sequence at the indentation of its key, as
// PyYAML and Patroni's examples do.
func writeYAMLList(b *strings.Builder, list []any, indent int) {
	pad := strings.Repeat(" ", indent)
	for _, e := range list {
		b.WriteString(pad)
		b.WriteString("-")
		if m, ok := e.(yamlMap); ok && len(m) > 0 {
			// The first key on the dash's line, the others below it.
			var inner strings.Builder
			writeYAMLMap(&inner, m, indent+2)
			b.WriteString(" ")
			b.WriteString(strings.TrimPrefix(inner.String(), strings.Repeat(" ", indent+2)))
			continue
		}
		b.WriteString(" ")
		b.WriteString(yamlScalar(e))
		b.WriteString("\n")
	}
}

// toJSON is m as JSON values (map[string]any, []any, string, int, int64,
// bool), as encoding/json writes and Patroni's REST API reads them.
// with is m followed by more's items.
func (m yamlMap) with(more yamlMap) yamlMap { return append(m, more...) }

func (m yamlMap) toJSON() map[string]any {
	out := make(map[string]any, len(m))
	for _, it := range m {
		out[it.key] = yamlToJSON(it.value)
	}
	return out
}

func yamlToJSON(v any) any {
	switch v := v.(type) {
	case yamlMap:
		return v.toJSON()
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = yamlToJSON(e)
		}
		return out
	default:
		return v
	}
}
