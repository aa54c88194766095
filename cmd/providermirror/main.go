// Command providermirror installs the provider from this checkout the way a release installs: it builds this
// machine's release archive with the repository's .goreleaser.yml and the GoReleaser pinned in tools/go.mod
// (internal/release, at the version of CHANGELOG.md's newest heading), checks the archive against the
// SHA256SUMS GoReleaser wrote, puts it into a Terraform filesystem mirror and prints the CLI configuration
// that installs pgnvme/pgnvme from there. `make test` installs the same archives through a network mirror,
// a filesystem mirror and the registry protocol (internal/release).
//
//	go run ./cmd/providermirror -dir ~/.terraform.d/pgnvme-mirror
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/tfwork"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/release"
)

func main() {
	dir := flag.String("dir", "", "the filesystem mirror to put the archive in (made when missing)")
	dist := flag.String("dist", "", "where GoReleaser writes the archive and its SHA256SUMS (default: a temporary directory, removed after)")
	flag.Parse()
	if *dir == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: go run ./cmd/providermirror -dir DIR [-dist DIR]")
		os.Exit(2)
	}
	if err := run(*dir, *dist); err != nil {
		fmt.Fprintln(os.Stderr, "providermirror:", err)
		os.Exit(1)
	}
}

func run(dir, dist string) error {
	root, err := tfwork.Root()
	if err != nil {
		return err
	}
	version, err := tfwork.ChangelogVersion(root)
	if err != nil {
		return err
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	if dist == "" {
		tmp, err := os.MkdirTemp("", "pgnvme-release-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dist = filepath.Join(tmp, "dist")
	} else if dist, err = filepath.Abs(dist); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fmt.Fprintf(os.Stderr, "building %s_%s's archive of %s with .goreleaser.yml ...\n", runtime.GOOS, runtime.GOARCH, version)
	rel, err := release.Build(ctx, release.Options{Root: root, Dist: dist, Version: version, GOOS: runtime.GOOS, GOARCH: runtime.GOARCH})
	if err != nil {
		return err
	}
	if err := rel.Verify(); err != nil {
		return err
	}
	path, err := rel.FilesystemMirror(dir)
	if err != nil {
		return err
	}
	fmt.Printf("%s (SHA-256 %s, as %s says)\n\n", path, rel.Sums[filepath.Base(rel.Archive)], filepath.Base(rel.SumsFile))
	fmt.Printf("Add to your CLI configuration (~/.terraformrc, or the file TF_CLI_CONFIG_FILE names), then run terraform init:\n\n%s",
		release.FilesystemMirrorConfig(dir))
	return nil
}
