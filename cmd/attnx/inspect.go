package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxfile"
)

// inspectedGraph is one graph in inspect's JSON output.
type inspectedGraph struct {
	Role  string `json:"role,omitempty"`
	File  string `json:"file"`
	Bytes int64  `json:"bytes"`
	onnxfile.Summary
}

// inspectedDir is inspect's JSON output for a model directory.
type inspectedDir struct {
	Dir    string           `json:"dir"`
	Model  *modeldir.Info   `json:"model"`
	Graphs []inspectedGraph `json:"graphs"`
}

func runInspect(args []string) error {
	fs := newFlagSet("inspect")
	asJSON := fs.Bool("json", false, "print one JSON object")
	toolkitConfig := fs.String("config", "", "a JoeyNMT model's config.yaml, for a JoeyNMT checkpoint (default: config.yaml beside it)")
	fairseqData := fs.String("data", "", "a fairseq model's data-bin `DIR` with dict.SRC.txt and dict.TGT.txt (as export's --data)")
	srcLang := fs.String("source-lang", "", "a fairseq model's source language, when its cfg names none")
	tgtLang := fs.String("target-lang", "", "a fairseq model's target language, when its cfg names none")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	pos := fs.Args()
	if len(pos) != 1 {
		return &usageError{fmt.Sprintf("want one FILE.onnx, model DIR or CHECKPOINT, got %d arguments", len(pos))}
	}
	path := pos[0]
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.IsDir() && !strings.EqualFold(filepath.Ext(path), ".onnx") {
		return inspectCheckpoint(path, modeldir.Options{ToolkitConfig: *toolkitConfig,
			Fairseq: checkpoint.FairseqFiles{DataDir: *fairseqData, SrcLang: *srcLang, TgtLang: *tgtLang}}, *asJSON)
	}
	if !st.IsDir() {
		g, err := inspectGraph(path, "")
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(stdout, g)
		}
		printGraph(stdout, g)
		return nil
	}
	infoPath := filepath.Join(path, modeldir.InfoFile)
	info, err := modeldir.ReadInfo(infoPath)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%s is not a model directory: it has no %s (attnx export writes one)", path, modeldir.InfoFile)
	}
	if err != nil {
		return err
	}
	out := inspectedDir{Dir: path, Model: info}
	for _, role := range roles(info.Files) {
		g, err := inspectGraph(filepath.Join(path, info.Files[role]), role)
		if err != nil {
			return err
		}
		out.Graphs = append(out.Graphs, g)
	}
	if *asJSON {
		return writeJSON(stdout, out)
	}
	printInfo(stdout, path, info)
	for _, g := range out.Graphs {
		fmt.Fprintln(stdout)
		printGraph(stdout, g)
	}
	return nil
}

// roles orders a files map: encoder, decoder, greedy, beam, then the rest.
func roles(files map[string]string) []string {
	rank := map[string]int{modeldir.RoleEncoder: 0, modeldir.RoleDecoder: 1, modeldir.RoleGreedy: 2, modeldir.RoleBeam: 3}
	out := make([]string, 0, len(files))
	for r := range files {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		ri, oki := rank[out[i]]
		rj, okj := rank[out[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return out[i] < out[j]
	})
	return out
}

func inspectGraph(path, role string) (inspectedGraph, error) {
	mp, err := onnxfile.Load(path)
	if err != nil {
		return inspectedGraph{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return inspectedGraph{}, err
	}
	return inspectedGraph{Role: role, File: path, Bytes: st.Size(), Summary: onnxfile.Summarize(mp)}, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// inspectCheckpoint says what attnx export would make of a checkpoint.
func inspectCheckpoint(path string, opt modeldir.Options, asJSON bool) error {
	info, res, err := modeldir.Describe(path, opt)
	if err != nil {
		return err
	}
	if asJSON {
		return writeJSON(stdout, struct {
			Checkpoint string         `json:"checkpoint"`
			Model      *modeldir.Info `json:"model"`
			Notes      []string       `json:"notes"`
		}{path, info, res.Notes})
	}
	fmt.Fprintf(stdout, "%s: a checkpoint attnx export converts as follows\n", path)
	printModel(stdout, info)
	for i, n := range res.Notes {
		label := "         "
		if i == 0 {
			label = "  notes  "
		}
		fmt.Fprintf(stdout, "%s%s\n", label, n)
	}
	return nil
}

func printInfo(w io.Writer, dir string, m *modeldir.Info) {
	fmt.Fprintf(w, "%s: attnx model (format %s v%d, producer %s", dir, m.Format, m.FormatVersion, m.Producer)
	if m.Source != "" {
		fmt.Fprintf(w, ", from %s", m.Source)
	}
	fmt.Fprintf(w, ")\n")
	printModel(w, m)
	printTokenizers(w, dir, m.SrcTokenizer, m.TgtTokenizer)
	fmt.Fprintf(w, "  files    %s\n", filesLine(m.Files))
}

// printModel writes attnx.json's description of the model: its origin,
// configuration, precision, special tokens and vocabularies.
func printModel(w io.Writer, m *modeldir.Info) {
	printToolkit(w, m.Toolkit, m.SrcPrefix, m.SrcSuffix, m.Decoding)
	printConfig(w, m.Config)
	fmt.Fprintf(w, "  opset    %d\n", m.Opset)
	fmt.Fprintf(w, "  weights  %s\n", attention.DescribeWeights(m.Weights))
	fmt.Fprintf(w, "  special  sos=%d eos=%d pad=%d unk=%s\n", m.Special.SOS, m.Special.EOS, m.Special.PAD, idOrUnknown(m.Special.UNK))
	if d := m.Defaults; d != nil {
		fmt.Fprintf(w, "  defaults %s (attnx.json; flags and request fields override them)\n", d.Summary())
	}
	vocab := func(toks []string) string {
		if toks == nil {
			return "not recorded"
		}
		shown := toks
		if len(shown) > 6 {
			shown = shown[:6]
		}
		q := make([]string, len(shown))
		for i, t := range shown {
			q[i] = fmt.Sprintf("%q", t)
		}
		more := ""
		if len(toks) > len(shown) {
			more = ", ..."
		}
		return fmt.Sprintf("%d tokens [%s%s]", len(toks), strings.Join(q, ", "), more)
	}
	fmt.Fprintf(w, "  src vocab  %s\n", vocab(m.SrcTokens))
	fmt.Fprintf(w, "  tgt vocab  %s\n", vocab(m.TgtTokens))
}

// filesLine lists a model directory's files by role.
func filesLine(f map[string]string) string {
	var files []string
	for _, r := range roles(f) {
		files = append(files, r+"="+f[r])
	}
	return strings.Join(files, " ")
}

func printGraph(w io.Writer, g inspectedGraph) {
	s := g.Summary
	title := g.File
	if g.Role != "" {
		title = g.Role + ": " + g.File
	}
	fmt.Fprintf(w, "%s (%s)\n", title, humanBytes(g.Bytes))
	var opsets []string
	for _, o := range s.Opsets {
		d := o.Domain
		if d == "" {
			d = "ai.onnx"
		}
		opsets = append(opsets, fmt.Sprintf("%s %d", d, o.Version))
	}
	fmt.Fprintf(w, "  ir_version %d, opset %s\n", s.IRVersion, strings.Join(opsets, ", "))
	producer := s.ProducerName
	if s.ProducerVersion != "" {
		producer += " " + s.ProducerVersion
	}
	if producer != "" {
		fmt.Fprintf(w, "  producer   %s\n", producer)
	}
	fmt.Fprintf(w, "  graph      %s\n", s.GraphName)
	if s.Doc != "" {
		fmt.Fprintf(w, "  doc        %s\n", s.Doc)
	}
	io := func(label string, vs []onnxfile.ValueSummary) {
		fmt.Fprintf(w, "  %s\n", label)
		width := 0
		for _, v := range vs {
			width = max(width, len(v.Name))
		}
		for _, v := range vs {
			fmt.Fprintf(w, "    %-*s  %s %s\n", width, v.Name, v.Type, v.Shape)
		}
	}
	io("inputs", s.Inputs)
	io("outputs", s.Outputs)
	var ops []string
	for _, o := range s.Ops {
		ops = append(ops, fmt.Sprintf("%s %d", o.Op, o.Count))
	}
	fmt.Fprintf(w, "  nodes      %d: %s\n", s.Nodes, strings.Join(ops, ", "))
	fmt.Fprintf(w, "  parameters %d in %d initializers (%s)\n", s.Parameters, s.Initializers, humanBytes(s.ParameterBytes))
	if len(s.Metadata) > 0 {
		keys := make([]string, 0, len(s.Metadata))
		for k := range s.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var kv []string
		for _, k := range keys {
			kv = append(kv, k+"="+s.Metadata[k])
		}
		fmt.Fprintf(w, "  metadata   %s\n", strings.Join(kv, " "))
	}
}
