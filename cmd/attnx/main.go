// Command attnx turns PyTorch attention seq2seq models into ONNX graphs that
// run in Go through ONNX Runtime, and checks them. Run `attnx help` for the
// list of commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
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
		{name: "translate", summary: "greedy-decode text or token ids with a model directory", usage: "--model DIR [flags] [--ids \"5 9 2\"]... [TEXT...]", run: runTranslate},
		{name: "export", summary: "convert a PyTorch checkpoint into a model directory of ONNX graphs", usage: "CHECKPOINT -o DIR [flags]", run: runExport},
		{name: "inspect", summary: "describe an .onnx file or a model directory", usage: "[--json] FILE.onnx|DIR", run: runInspect},
		{name: "verify", summary: "check a model directory against the PyTorch reference on the same inputs", usage: "--model DIR --checkpoint CKPT [flags]", run: runVerify},
		{name: "bench", summary: "measure greedy decoding speed: PyTorch eager, torch.onnx graphs, attnx step loop and in-graph loop, floor", usage: "[flags]", run: runBench},
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

var (
	stdout io.Writer = os.Stdout
	stderr io.Writer = os.Stderr
)

func main() {
	os.Exit(run(os.Args[1:]))
}

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
	case err == nil, errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "attnx %s: %s\nRun 'attnx help %s' for usage.\n", name, ue.msg, name)
		return exitUsage
	}
	fmt.Fprintf(stderr, "attnx %s: %v\n", name, err)
	return exitFailure
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
}

// newFlagSet returns a flag set for command name that prints its usage to
// stdout on -h and reports errors through the returned error (not by
// exiting), so that the command returns a usageError.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("attnx "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// The flag package calls Usage itself on -h and on every parse error;
	// parseFlags prints the help once, and only for -h.
	fs.Usage = func() {}
	return fs
}

// printFlagUsage writes the help of command name, with fs's flags, to stdout.
func printFlagUsage(name string, fs *flag.FlagSet) {
	c := lookup(name)
	fmt.Fprintf(stdout, "Usage: attnx %s %s\n\n%s.\n", name, c.usage, upperFirst(c.summary))
	if doc := commandDocs[name]; doc != "" {
		fmt.Fprintf(stdout, "\n%s\n", strings.TrimSpace(doc))
	}
	fmt.Fprintf(stdout, "\nFlags:\n")
	fs.SetOutput(stdout)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// commandDocs holds longer help texts, by command name; each command's
// file fills in its own entry.
var commandDocs = map[string]string{}

// parseFlags parses args with fs, turning parse errors into usageErrors
// and -h into flag.ErrHelp after printing the usage.
func parseFlags(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		printFlagUsage(strings.TrimPrefix(fs.Name(), "attnx "), fs)
		return flag.ErrHelp
	}
	return &usageError{err.Error()}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
