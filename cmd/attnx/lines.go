package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// stdinName is the file name that means standard input, wherever attnx
// reads a file.
const stdinName = "-"

// readSegments reads a test set's lines, one sentence each, from path
// ("-": stdin), without their ends: lines end at \n, a \r before it
// dropped (the toolkits' translate commands read their test sets so, and
// a \r inside a line is text); a last line without an end counts, and an
// empty file has no lines.
func readSegments(path string) ([]string, error) {
	if path == stdinName {
		return splitLines(stdin, "stdin")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return splitLines(f, path)
}

func splitLines(r io.Reader, name string) ([]string, error) {
	var out []string
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			out = append(out, strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"))
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
	}
}
