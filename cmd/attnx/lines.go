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

// lineEnds says where a file's lines end.
type lineEnds int

const (
	// newlineEnds: at \n, a \r before it dropped; the toolkits' translate
	// commands read their test sets so, and a \r inside a line is text.
	newlineEnds lineEnds = iota
	// universalEnds: at \n, \r\n or a lone \r, as Python's text files
	// (and so sacreBLEU) read them.
	universalEnds
)

// readLines reads the lines of path ("-": stdin), without their ends; a
// last line without one counts, and an empty file has no lines.
func readLines(path string, ends lineEnds) ([]string, error) {
	if path == stdinName {
		return splitLines(stdin, "stdin", ends)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return splitLines(f, path, ends)
}

// readSegments reads a test set's lines, one sentence each (see
// newlineEnds).
func readSegments(path string) ([]string, error) { return readLines(path, newlineEnds) }

func splitLines(r io.Reader, name string, ends lineEnds) ([]string, error) {
	var out []string
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
			if ends == universalEnds {
				out = append(out, strings.Split(line, "\r")...)
			} else {
				out = append(out, line)
			}
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
	}
}
