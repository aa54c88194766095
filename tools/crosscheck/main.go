// Command crosscheck type-checks a Go package and every package it imports for other systems, as the
// compiler's front end does for each GOOS/GOARCH given, without generating code or linking:
//
//	crosscheck -dir DIR -pkg PATTERN GOOS/GOARCH...
//
// For each target it lists the package's build with the target's build constraints (go list, through
// golang.org/x/tools/go/packages; CGO_ENABLED=0 and GOARM=6, as GoReleaser builds) and type-checks every
// package from source with the target's sizes, so an identifier one system lacks (a Linux-only system
// call), a file left out by a build constraint or an int constant too big for 32 bits is an error here, with
// its position. It prints one line per target and exits 1 when any target has an error (`make
// release-check`).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/tools/go/packages"
)

func main() {
	dir := flag.String("dir", ".", "the module directory to check from")
	pattern := flag.String("pkg", ".", "the package pattern to check")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: crosscheck -dir DIR -pkg PATTERN GOOS/GOARCH...")
		os.Exit(2)
	}
	failed := false
	for _, target := range flag.Args() {
		goos, goarch, ok := strings.Cut(target, "/")
		if !ok {
			fmt.Fprintf(os.Stderr, "crosscheck: %q is not GOOS/GOARCH\n", target)
			os.Exit(2)
		}
		start := time.Now()
		n, errs, err := check(*dir, *pattern, goos, goarch)
		switch {
		case err != nil:
			fmt.Printf("%s: %v\n", target, err)
			failed = true
		case len(errs) > 0:
			for _, e := range errs {
				fmt.Printf("%s: %s\n", target, e)
			}
			failed = true
		default:
			fmt.Printf("%s ok (%d packages type-checked, %.0fs)\n", target, n, time.Since(start).Seconds())
		}
	}
	if failed {
		os.Exit(1)
	}
}

// check loads pattern for goos/goarch with every dependency type-checked from source, and returns how many
// packages it checked and their errors.
func check(dir, pattern, goos, goarch string) (int, []string, error) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedDeps |
			packages.NeedTypes | packages.NeedSyntax | packages.NeedTypesSizes,
		Dir: dir,
		Env: append(os.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOARM=6"),
	}
	pkgs, err := packages.Load(cfg, pattern)
	if err != nil {
		return 0, nil, err
	}
	n := 0
	var errs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		n++
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
	})
	return n, errs, nil
}
