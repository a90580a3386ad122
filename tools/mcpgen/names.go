package main

import "strings"

// initialisms are written in capitals inside Go names, as Go style has it.
var initialisms = map[string]string{
	"id": "ID", "url": "URL", "uri": "URI", "json": "JSON", "http": "HTTP",
	"api": "API", "html": "HTML", "sql": "SQL", "mime": "MIME", "utc": "UTC",
}

// camel turns a snake_case (or kebab-case) wire name into an exported Go
// name: query_records -> QueryRecords, connection_id -> ConnectionID.
func camel(name string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' }) {
		if up, ok := initialisms[part]; ok {
			b.WriteString(up)
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}
