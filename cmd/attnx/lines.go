package main

import (
	"os"

	"github.com/attnx/attnx/internal/segments"
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
		return segments.Read(stdin, "stdin")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return segments.Read(f, path)
}
