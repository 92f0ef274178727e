// Command attnx turns PyTorch attention seq2seq models into ONNX graphs that
// run in Go through ONNX Runtime, and checks them. Run `attnx help` for the
// list of commands.
package main

import (
	"embed"
	"errors"
	"fmt"
	"github.com/attnx/attnx/onnxrun"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/spf13/pflag"
)

// command is one subcommand. Adding a command is one entry in commands and
// one file with its run function.
type command struct {
	// name is what the user types.
	name string
	// summary is the one-line description in `attnx help`.
	summary string
	// usage is the argument synopsis after the name, such as "[flags] [dir...]".
	usage string
	// run runs the command with the arguments after its name. It returns
	// a *exitError to choose the exit status, errHelp after printing help,
	// a usageError for bad arguments, and any other error for failure.
	run func(args []string) error
}

// commands is the table of subcommands. It is filled in init because the
// run functions refer back to it (for their usage text).
var commands []command

func init() {
	commands = []command{
		{name: "conformance", summary: "run the ONNX backend test data through export and ONNX Runtime", usage: "[flags] [dir...]", run: runConformance},
		{name: "translate", summary: "greedy-decode or beam-search text or token ids with a model directory", usage: "--model DIR [flags] [--ids \"5 9 2\"]... [TEXT...]", run: runTranslate},
		{name: "merge", summary: "join the parts of a test set translated in shards (translate --shard K/N), checking that every line is there", usage: "OUTPUT", run: runMerge},
		{name: "export", summary: "convert a PyTorch checkpoint into a model directory of ONNX graphs", usage: "CHECKPOINT -o DIR [flags]", run: runExport},
		{name: "inspect", summary: "describe an .onnx file, a model directory, or what export makes of a checkpoint", usage: "[--json] [--config FILE] FILE.onnx|DIR|CHECKPOINT", run: runInspect},
		{name: "generate", summary: generateSummary, usage: "DATA-BIN --model DIR [--gen-subset test] [--beam K] [--remove-bpe] [--scoring bleu|sacrebleu] [flags]", run: runGenerate},
		{name: "test", summary: joeyTestSummary, usage: "CONFIG [--model DIR] [-o PATH] [flags]", run: runJoeyTest},
		{name: "score", summary: "corpus BLEU and chrF of translations against references, as sacreBLEU computes them", usage: "--ref REF [--ref REF2]... [HYP]", run: runScore},
		{name: "verify", summary: "check a model directory against the PyTorch reference on the same inputs", usage: "--model DIR --checkpoint CKPT [flags]", run: runVerify},
		{name: "bench", summary: "measure decoding speed (greedy, beam search, each weights precision): PyTorch eager, torch.onnx graphs, attnx step loops and in-graph loop, floor", usage: "[flags]", run: runBench},
		{name: "loadtest", summary: "measure attnx serve under concurrent clients: sentences/s, tokens/s, latency p50/p99", usage: "--model DIR|--url URL --inputs FILE [flags]", run: runLoadtest},
		{name: "serve", summary: "serve translations over HTTP, with metrics and an attention viewer", usage: "--model [NAME=]DIR... [--addr HOST:PORT] [flags]", run: runServe},
		{name: "version", summary: "print attnx's version, the Go version and the ONNX Runtime library it loads", usage: "[--json]", run: runVersion},
	}
}

// exitError makes main exit with code without printing anything more.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// usageError is a mistake in the command line; main prints it with a hint
// and exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// parseOnly, set by tests, stops every command once its flags are parsed:
// parseFlags then returns errParsedOnly, which report takes for success.
// The documentation's command lines are checked so.
var parseOnly bool

var errParsedOnly = errors.New("flags parsed; parse-only mode")

// The standard streams, variables for tests. A file argument "-" means
// stdin wherever attnx reads a file.
var (
	stdin  io.Reader = os.Stdin
	stdout io.Writer = os.Stdout
	stderr io.Writer = os.Stderr
)

func main() {
	if os.Getenv("GOGC") == "" {
		// attnx's heap is mostly model weights, alive as long as the
		// process: Go's default (100) lets garbage grow to their size
		// again between collections. At 50 the native backend's peak
		// memory stays at or below ONNX Runtime's for about 2% more time
		// (docs/native.md); GOGC in the environment still decides.
		debug.SetGCPercent(gcPercent)
	}
	os.Exit(run(os.Args[1:]))
}

// gcPercent is the collector's target the CLI runs with (see main).
const gcPercent = 50

// run dispatches args and returns the exit status. It never lets a panic
// escape: a bug prints one clean line instead of a stack trace.
func run(args []string) (code int) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "attnx: internal error: %v\n(this is a bug in attnx; please report it with the command line)\n", p)
			code = exitFailure
		}
	}()
	if len(args) == 0 {
		printUsage(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			printUsage(stdout)
			return exitOK
		}
		c := lookup(rest[0])
		if c == nil {
			fmt.Fprintf(stderr, "attnx help: unknown command %q\n", rest[0])
			printUsage(stderr)
			return exitUsage
		}
		return report(c.name, c.run([]string{"-h"}))
	case "-version", "--version":
		name = "version"
	}
	c := lookup(name)
	if c == nil {
		fmt.Fprintf(stderr, "attnx: unknown command %q\n", name)
		printUsage(stderr)
		return exitUsage
	}
	return report(c.name, c.run(rest))
}

// report turns a command's error into output and an exit status.
func report(name string, err error) int {
	var ee *exitError
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, pflag.ErrHelp), errors.Is(err, errParsedOnly):
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "attnx %s: %s\nRun 'attnx help %s' for usage.\n", name, ue.msg, name)
		return exitUsage
	}
	fmt.Fprintf(stderr, "attnx %s: %s\n", name, cliText(err))
	return exitFailure
}

// cliText is err's message with the typed errors in its chain that carry
// a remedy worded in their own flags' terms instead of the packages' Go
// options.
func cliText(err error) string {
	msg := err.Error()
	var cuda *onnxrun.CUDAUnavailableError
	if errors.As(err, &cuda) {
		msg = strings.Replace(msg, cuda.Error(), cuda.Remedy("pass --device cpu, or --device auto to fall back to the CPU"), 1)
	}
	return msg
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func printUsage(w io.Writer) {
	fmt.Fprintf(w, "attnx turns PyTorch attention seq2seq models into ONNX and checks them.\n\n")
	fmt.Fprintf(w, "Usage:\n  attnx <command> [arguments]\n\nCommands:\n")
	cs := append([]command(nil), commands...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].name < cs[j].name })
	width := 0
	for _, c := range cs {
		width = max(width, len(c.name))
	}
	for _, c := range cs {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'attnx help <command>' or 'attnx <command> -h' for a command's flags.\n")
	fmt.Fprintf(w, "Flags may come before, between or after arguments; -- ends them.\n")
	fmt.Fprintf(w, "Long flags take two dashes (--json) or one (-json), short ones one (-o).\n")
}

// newFlagSet returns the flag set of command name. Every command parses
// its flags with package pflag, GNU style: flags may come before, between
// and after positional arguments, "--" ends them, long flags are --name
// (and, through normalizeArgs, -name as package flag accepted), shorthands
// -x. The set prints nothing itself: parseFlags prints the help on -h and
// returns parse errors as usageErrors.
func newFlagSet(name string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("attnx "+name, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// printFlagUsage writes the help of command name, with fs's flags, to stdout.
func printFlagUsage(name string, fs *pflag.FlagSet) {
	c := lookup(name)
	fmt.Fprintf(stdout, "Usage: attnx %s %s\n\n%s.\n", name, c.usage, upperFirst(c.summary))
	if doc := commandDocs[name]; doc != "" {
		fmt.Fprintf(stdout, "\n%s\n", strings.TrimSpace(doc))
	}
	fmt.Fprintf(stdout, "\nFlags:\n%s", fs.FlagUsagesWrapped(80))
}

// commandDocs holds longer help texts, by command name: help/NAME.txt's,
// or filled in by the command's file where the text holds constants.
var commandDocs = helpTexts()

// helpDir holds the commands' help texts, help/NAME.txt each.
//
//go:embed help/*.txt
var helpDir embed.FS

// helpTexts reads helpDir's texts.
func helpTexts() map[string]string {
	docs := map[string]string{}
	// The files are embedded at build time: reading them cannot fail.
	files, _ := helpDir.ReadDir("help")
	for _, f := range files {
		b, _ := helpDir.ReadFile("help/" + f.Name())
		docs[strings.TrimSuffix(f.Name(), ".txt")] = string(b)
	}
	return docs
}

// parseFlags parses args with fs; the positional arguments are then
// fs.Args(). Parse errors become usageErrors naming the flag, and -h or
// --help prints the command's help and returns pflag.ErrHelp.
// backendFlag adds --backend, the engine that runs the graphs, to fs.
func backendFlag(fs *pflag.FlagSet) *string {
	return fs.String("backend", "", "graph engine: go (attnx's native Go evaluator: no cgo, no shared library, CPU only; the default) or ort (ONNX Runtime; the default with --device cuda)")
}

// checkBackend validates a --backend value, together with --device when
// the command has one ("" when it has not).
func checkBackend(backend, device string) error {
	switch backend {
	case "", onnxrun.BackendORT:
	case onnxrun.BackendGo:
		if device == onnxrun.DeviceCUDA {
			return &usageError{"--backend go runs on the CPU only: --device cuda needs --backend ort"}
		}
	default:
		return &usageError{fmt.Sprintf("--backend %q: want ort or go", backend)}
	}
	return nil
}

func parseFlags(fs *pflag.FlagSet, args []string) error {
	args, err := normalizeArgs(fs, args)
	if err == nil {
		err = fs.Parse(args)
	}
	switch {
	case err == nil && parseOnly:
		return errParsedOnly
	case err == nil:
		return nil
	case errors.Is(err, pflag.ErrHelp):
		printFlagUsage(strings.TrimPrefix(fs.Name(), "attnx "), fs)
		return pflag.ErrHelp
	}
	msg := err.Error()
	if name, ok := unknownFlag(msg); ok {
		if hint := toolkitFlagHint(fs, name); hint != "" {
			msg = fmt.Sprintf("unknown flag %s: attnx's is %s", name, hint)
			if rest, ok := strings.CutPrefix(hint, "default: "); ok {
				msg = fmt.Sprintf("unknown flag %s: attnx does this by default (%s)", name, rest)
			}
			if rest, ok := strings.CutPrefix(hint, "not supported: "); ok {
				msg = fmt.Sprintf("unknown flag %s: not supported (%s)", name, rest)
			}
		}
	}
	return &usageError{msg}
}

// unknownFlag returns the flag an "unknown flag" error of pflag or
// normalizeArgs names, as typed.
func unknownFlag(msg string) (string, bool) {
	for _, p := range []string{"unknown flag: ", "unknown shorthand flag: "} {
		if rest, ok := strings.CutPrefix(msg, p); ok {
			name, _, _ := strings.Cut(rest, " ")
			return name, true
		}
	}
	return "", false
}

// normalizeArgs rewrites args for pflag so that the flag spellings package
// flag accepted keep working: -name[=v] becomes --name[=v] when name is a
// long flag of fs, and --x[=v] becomes -x[=v] when x is only a shorthand.
// A single-dash argument that is neither a long flag nor starts with a
// shorthand is an unknown flag (pflag would report its first letter, or
// ignore it silently when it starts with "test."). Values of flags that
// take one are passed through untouched, so --plot -json plots to "-json";
// so is everything after "--".
func normalizeArgs(fs *pflag.FlagSet, args []string) ([]string, error) {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...), nil
		}
		if len(a) < 2 || a[0] != '-' {
			out = append(out, a)
			continue
		}
		var f *pflag.Flag
		if a[1] == '-' {
			name, _, _ := strings.Cut(a[2:], "=")
			if f = fs.Lookup(name); f == nil && len(name) == 1 {
				if f = fs.ShorthandLookup(name); f != nil {
					a = a[1:]
				}
			}
		} else {
			name, _, _ := strings.Cut(a[1:], "=")
			switch {
			case len(name) > 1 && fs.Lookup(name) != nil:
				f = fs.Lookup(name)
				a = "-" + a
			case name == "help":
				a = "-" + a
			case a == "-h" || fs.ShorthandLookup(a[1:2]) != nil:
				if len(a) == 2 {
					f = fs.ShorthandLookup(a[1:2])
				}
			default:
				return nil, fmt.Errorf("unknown flag: -%s (arguments that begin with - go after --)", name)
			}
		}
		out = append(out, a)
		if f != nil && f.NoOptDefVal == "" && !strings.Contains(a, "=") && i+1 < len(args) {
			out = append(out, args[i+1])
			i++
		}
	}
	return out, nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
