package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/attnx/attnx/internal/kernel"
	"github.com/attnx/attnx/onnxrun"
)

// versionReport is what `attnx version` prints; --json writes it as is.
type versionReport struct {
	// Version is the module version ("v1.2.0", a pseudo-version, or
	// "(devel)" for a build from a source tree).
	Version string `json:"version"`
	// Revision, Time and Modified are the commit the binary was built
	// from, when the build recorded it.
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Go is the Go release that built the binary; Platform is GOOS/GOARCH.
	Go       string `json:"go"`
	Platform string `json:"platform"`
	// Backends lists the graph engines this binary has ("ort" only when
	// built with cgo; "go" always), Default the one used without
	// --backend, and Kernels the native evaluator's product kernels
	// ("avx2+fma" or "go").
	Backends []string `json:"backends"`
	Default  string   `json:"default_backend"`
	Kernels  string   `json:"native_kernels"`
	// KernelPath is the native kernels' path (kernel.Path: the best this
	// CPU runs, or ATTNX_KERNELS's), KernelPaths those the CPU runs, and
	// KernelError an ATTNX_KERNELS value that cannot be honoured.
	KernelPath  string   `json:"native_kernel_path"`
	KernelPaths []string `json:"native_kernel_paths"`
	KernelError string   `json:"native_kernel_error,omitempty"`
	// ORT is the ONNX Runtime library found, or why none was.
	ORT versionORT `json:"onnxruntime"`
}

// versionORT describes the ONNX Runtime library: Path and Version when it
// loaded, Error otherwise.
type versionORT struct {
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
}

// buildVersion fills in the attnx and Go parts of a versionReport from
// the build information (ok false: the binary has none).
func buildVersion(bi *debug.BuildInfo, ok bool) versionReport {
	rep := versionReport{Version: "unknown", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok || bi == nil {
		return rep
	}
	if bi.Main.Version != "" {
		rep.Version = bi.Main.Version
	}
	if bi.GoVersion != "" {
		rep.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rep.Revision = s.Value
		case "vcs.time":
			rep.Time = s.Value
		case "vcs.modified":
			rep.Modified = s.Value == "true"
		}
	}
	return rep
}

// findORT loads ONNX Runtime the way every command does and reports it.
func findORT() versionORT {
	if err := onnxrun.Init(); err != nil {
		return versionORT{Error: strings.TrimPrefix(err.Error(), "onnxrun: ")}
	}
	return versionORT{Path: onnxrun.LibraryPath(), Version: onnxrun.Version()}
}

// writeVersion prints rep as text.
func writeVersion(w io.Writer, rep versionReport) {
	fmt.Fprintf(w, "attnx %s\n", rep.Version)
	switch {
	case rep.Revision == "":
		fmt.Fprintf(w, "  commit       not recorded (built outside a git clone, in a worktree, or with -buildvcs=false)\n")
	default:
		var notes []string
		if rep.Time != "" {
			notes = append(notes, rep.Time)
		}
		if rep.Modified {
			notes = append(notes, "modified")
		}
		fmt.Fprintf(w, "  commit       %s", rep.Revision)
		if len(notes) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(notes, ", "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  go           %s %s\n", rep.Go, rep.Platform)
	fmt.Fprintf(w, "  backends     %s (default %s; native kernels %s)\n", strings.Join(rep.Backends, ", "), rep.Default, rep.Kernels)
	fmt.Fprintf(w, "  kernel path  %s (this CPU runs %s; %s picks one)\n", rep.KernelPath, strings.Join(rep.KernelPaths, ", "), kernel.EnvPath)
	if rep.KernelError != "" {
		fmt.Fprintf(w, "  kernel error %s\n", rep.KernelError)
	}
	if rep.ORT.Error != "" {
		fmt.Fprintf(w, "  onnxruntime  not loaded: %s\n", rep.ORT.Error)
		return
	}
	fmt.Fprintf(w, "  onnxruntime  %s %s\n", rep.ORT.Version, rep.ORT.Path)
}

func runVersion(args []string) error {
	fs := newFlagSet("version")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	rep := buildVersion(debug.ReadBuildInfo())
	rep.Backends, rep.Default, rep.Kernels = []string{onnxrun.BackendGo}, onnxrun.DefaultBackend, kernel.Accelerated()
	rep.KernelPath, rep.KernelPaths = kernel.Path(), kernel.Paths()
	if err := kernel.PathError(); err != nil {
		rep.KernelError = err.Error()
	}
	if onnxrun.HasORT {
		rep.Backends = []string{onnxrun.BackendGo, onnxrun.BackendORT}
	}
	rep.ORT = findORT()
	if *asJSON {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		writeVersion(stdout, rep)
	}
	if rep.ORT.Error != "" && rep.Default == onnxrun.BackendORT {
		return &exitError{exitFailure}
	}
	return nil
}
