package main

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// yamlLine matches the "yaml: line N: " prefix of a yaml.v3 syntax error.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError names the file and the line of a YAML problem, as an editor's
// file:line. yaml.v3 reports a syntax error inside a block collection at the
// line where the collection starts (an indentation slip at line 158 of an
// args list starting at line 151 is "line 151"); the line given here is
// the first at which the document stops parsing, found by parsing longer
// and longer prefixes of it, and the collection's line is kept as context.
// Type errors (unknown keys, wrong kinds) already carry their own lines.
func yamlError(file string, data []byte, err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		lines := make([]string, len(te.Errors))
		for i, e := range te.Errors {
			lines[i] = file + ":" + strings.TrimPrefix(e, "line ")
		}
		return errors.New(strings.Join(lines, "\n"))
	}
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	reported, _ := strconv.Atoi(m[1])
	line := firstFailingLine(data, reported)
	if line == reported {
		return fmt.Errorf("%s:%d: %s", file, line, m[2])
	}
	return fmt.Errorf("%s:%d: %s (in the block that starts at line %d; check this line's indentation)", file, line, m[2], reported)
}

// firstFailingLine returns the first line from `from` on such that the
// document up to and including it does not parse; from when none does
// (the error is then about the document as a whole). Bounded by the
// document's line count: at most that many parses, on the error path only.
func firstFailingLine(data []byte, from int) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	for n := max(from, 1); n <= len(lines); n++ {
		var node yaml.Node
		if err := yaml.Unmarshal(bytes.Join(lines[:n], nil), &node); err != nil {
			return n
		}
	}
	return from
}
