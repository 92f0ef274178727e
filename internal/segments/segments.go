// Package segments reads a test set's lines as the toolkits' translate
// commands read them (fairseq-interactive, onmt_translate, JoeyNMT's
// translate): one sentence a line, lines ending at \n with a \r before it
// dropped, a \r inside a line kept as text, a last line without its \n
// counted, and an empty file holding no lines. attnx translate --src and
// a shard (package shard) read their lines through it.
package segments

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Read reads r's lines without their ends; name names it in errors.
func Read(r io.Reader, name string) ([]string, error) {
	var out []string
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			out = append(out, strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"))
		}
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
	}
}
