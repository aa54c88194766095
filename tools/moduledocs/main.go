// Command moduledocs keeps the Terraform modules under modules/ and what is made from them in step with
// their code (terraform-docs is not available here; the module is read with
// hashicorp/terraform-config-inspect, the library Terraform's registry uses):
//
//	moduledocs readme MODULE_DIR...
//	    rewrites the Requirements, Inputs and Outputs tables in each module's README.md, between the
//	    markers <!-- BEGIN_MODULE_DOCS --> and <!-- END_MODULE_DOCS --> (`make generate`).
//	moduledocs dist -version X.Y.Z -out DIR MODULE_DIR...
//	    writes each module as a standalone tree DIR/terraform-pgnvme-<name>/ for a registry mirror: the
//	    module at the root, every pgnvme provider requirement set to ">= X.Y.Z", and every module call
//	    whose relative source points at one of the given modules set to the registry address
//	    pgnvme/<name>/pgnvme at version X.Y.Z (`make modules-dist`).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "moduledocs:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: moduledocs readme MODULE_DIR... | moduledocs dist -version X.Y.Z -out DIR MODULE_DIR...")
	}
	switch args[0] {
	case "readme":
		if len(args) < 2 {
			return errors.New("readme needs at least one module directory")
		}
		for _, dir := range args[1:] {
			changed, err := writeReadme(dir)
			if err != nil {
				return err
			}
			if changed {
				fmt.Printf("%s: tables regenerated\n", filepath.Join(dir, "README.md"))
			}
		}
		return nil
	case "dist":
		fs := flag.NewFlagSet("dist", flag.ContinueOnError)
		version := fs.String("version", "", "released provider version, e.g. 0.1.0 (no leading v)")
		out := fs.String("out", "", "directory that receives terraform-pgnvme-<name>/ per module")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *out == "" || fs.NArg() == 0 {
			return errors.New("dist needs -version, -out and at least one module directory")
		}
		dirs, err := writeDist(*version, *out, fs.Args())
		if err != nil {
			return err
		}
		for _, d := range dirs {
			fmt.Println(d)
		}
		return nil
	default:
		return fmt.Errorf("unknown command %q: use readme or dist", args[0])
	}
}
