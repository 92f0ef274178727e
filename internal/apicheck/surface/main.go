// Command surface counts the exported names of each package a user of a
// module can import, and those without a doc comment:
//
//	go run ./internal/apicheck/surface [-undocumented] [module root]
//
// The root defaults to the working directory.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/attnx/attnx/internal/apicheck"
)

func main() {
	list := flag.Bool("undocumented", false, "list each name without a doc comment")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	pkgs, err := apicheck.Scan(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "surface:", err)
		os.Exit(1)
	}
	kinds := []string{apicheck.KindType, apicheck.KindFunc, apicheck.KindMethod, apicheck.KindConst, apicheck.KindVar}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "package\ttypes\tfuncs\tmethods\tconsts\tvars\tnames\tfields\tundocumented names\tundocumented fields\t")
	var total [9]int
	for _, p := range pkgs {
		row := []int{}
		for _, k := range kinds {
			row = append(row, p.Count(k))
		}
		row = append(row, p.Count(kinds...), p.Count(apicheck.KindField), len(p.Undocumented(kinds...)), len(p.Undocumented(apicheck.KindField)))
		cells := make([]string, len(row))
		for i, v := range row {
			total[i] += v
			cells[i] = fmt.Sprint(v)
		}
		fmt.Fprintf(w, "%s\t%s\t\n", p.Path, strings.Join(cells, "\t"))
	}
	cells := make([]string, len(total))
	for i, v := range total {
		cells[i] = fmt.Sprint(v)
	}
	fmt.Fprintf(w, "%d packages\t%s\t\n", len(pkgs), strings.Join(cells, "\t"))
	w.Flush()
	if *list {
		for _, p := range pkgs {
			for _, n := range p.Undocumented() {
				fmt.Printf("%s: %s %s %s\n", n.Pos, p.Path, n.Kind, n.Name)
			}
		}
	}
}
