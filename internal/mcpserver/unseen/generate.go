package unseen

//go:generate go run github.com/pdpp-mcp/pdpp-mcp/tools/unseengen -out table.go
