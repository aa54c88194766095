// Package release builds the provider's release archives for one platform the way the release workflow
// builds them for all: the repository's own .goreleaser.yml, run by the GoReleaser pinned in tools/go.mod
// (`goreleaser release`), as a snapshot (nothing is published). What differs from a tagged release is
// written into a generated copy of the configuration and nothing else: the build's targets are the one
// platform asked for (all fourteen take minutes), the output directory is the caller's, and the version is
// the one a release tagged v<version> would carry (a snapshot's default is a pre-release such as
// 0.1.0-SNAPSHOT-abc1234, which Terraform selects only when pinned exactly).
//
// The result is the zip, the SHA256SUMS (which lists the registry manifest too) and, when a GPG key is
// given, the SHA256SUMS's detached signature, named as the registry expects them. FilesystemMirror lays a
// zip out as Terraform's filesystem_mirror finds it.
package release

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"
)

// The provider's registry address (registry.terraform.io/pgnvme/pgnvme) and the project's name, which
// begins every file name of a release.
const (
	Hostname    = "registry.terraform.io"
	Namespace   = "pgnvme"
	Type        = "pgnvme"
	ProjectName = "terraform-provider-" + Type
)

// Options says what to build.
type Options struct {
	// Root is the repository's top directory (where .goreleaser.yml and tools/go.mod are).
	Root string
	// Dist is GoReleaser's output directory; it is emptied first.
	Dist string
	// Version is the version the archives carry (no leading v): the release tagged v<Version>.
	Version string
	// GOOS and GOARCH are the one platform built.
	GOOS, GOARCH string
	// GPGFingerprint signs SHA256SUMS with that key through the configuration's own `signs` section (gpg, with
	// the GNUPGHOME of Env); "" leaves the signature out (--skip=sign).
	GPGFingerprint string
	// Env is added to the environment GoReleaser runs with (GNUPGHOME, GOFLAGS, ...).
	Env []string
}

// Release is what the build wrote.
type Release struct {
	Dir     string
	Version string
	// Sums maps each file SHA256SUMS lists to its SHA-256 (hex), as SHA256SUMS says.
	Sums map[string]string
	// SumsFile is the SHA256SUMS; SignatureFile its detached signature ("" when not signed).
	SumsFile, SignatureFile string
	// Archive is the zip of the platform built.
	Archive string
	// Output is GoReleaser's own report.
	Output string
}

// ArchiveName is the zip GoReleaser's archives section names for a platform:
// terraform-provider-pgnvme_<version>_<os>_<arch>.zip, the name the registry and the mirrors require.
func ArchiveName(version, goos, goarch string) string {
	return fmt.Sprintf("%s_%s_%s_%s.zip", ProjectName, version, goos, goarch)
}

// SumsName is the checksum file's name; its signature adds ".sig".
func SumsName(version string) string { return fmt.Sprintf("%s_%s_SHA256SUMS", ProjectName, version) }

// ManifestName is the name the registry manifest takes in SHA256SUMS and in the release's assets.
func ManifestName(version string) string {
	return fmt.Sprintf("%s_%s_manifest.json", ProjectName, version)
}

// Build runs GoReleaser on o.Root with a configuration generated from its .goreleaser.yml (Config) and reads
// what it wrote. GoReleaser's `before` hooks (`go mod tidy`) are skipped: on a working tree they would
// rewrite go.mod and go.sum in place; the release workflow runs them on a clean checkout of the tag.
func Build(ctx context.Context, o Options) (Release, error) {
	src, err := os.ReadFile(filepath.Join(o.Root, ".goreleaser.yml"))
	if err != nil {
		return Release{}, err
	}
	cfg, err := Config(src, o.Dist, o.GOOS, o.GOARCH)
	if err != nil {
		return Release{}, err
	}
	if err := os.MkdirAll(filepath.Dir(o.Dist), 0o755); err != nil {
		return Release{}, err
	}
	cfgFile := o.Dist + ".goreleaser.yml"
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		return Release{}, err
	}
	skip := "before"
	if o.GPGFingerprint == "" {
		skip += ",sign"
	}
	cmd := exec.CommandContext(ctx, "go", "tool", "-modfile=tools/go.mod", "goreleaser", "release",
		"--snapshot", "--clean", "--skip="+skip, "--config", cfgFile)
	cmd.Dir = o.Root
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.Env = append(cmd.Env,
		// The tag a release of this version is built from: GoReleaser takes {{ .Version }} from it.
		"GORELEASER_CURRENT_TAG=v"+o.Version,
		"GPG_FINGERPRINT="+o.GPGFingerprint,
		// GoReleaser reads the remote's URL with the rest of the git state and, in a checkout without a
		// remote, drops that state (the tag and the commit) for placeholders: name the release's repository.
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=remote.origin.url",
		"GIT_CONFIG_VALUE_0=https://github.com/"+Namespace+"/"+ProjectName+".git")
	out, err := cmd.CombinedOutput()
	r := Release{Dir: o.Dist, Version: o.Version, Output: string(out)}
	if err != nil {
		return r, fmt.Errorf("goreleaser release --snapshot for %s_%s: %w\n%s", o.GOOS, o.GOARCH, err, out)
	}
	r.SumsFile = filepath.Join(o.Dist, SumsName(o.Version))
	if r.Sums, err = ReadSums(r.SumsFile); err != nil {
		return r, err
	}
	r.Archive = filepath.Join(o.Dist, ArchiveName(o.Version, o.GOOS, o.GOARCH))
	if _, err := os.Stat(r.Archive); err != nil {
		return r, fmt.Errorf("goreleaser did not write the archive: %w\n%s", err, out)
	}
	if o.GPGFingerprint != "" {
		r.SignatureFile = r.SumsFile + ".sig"
		if _, err := os.Stat(r.SignatureFile); err != nil {
			return r, fmt.Errorf("goreleaser did not sign %s: %w\n%s", r.SumsFile, err, out)
		}
	}
	return r, nil
}

// Config is the GoReleaser configuration src (the repository's .goreleaser.yml) changed only where a
// one-platform snapshot must differ from the release: `dist` is dist, every build's `goos` and `goarch`
// are goos and goarch alone, and the snapshot's version is the tag's ({{ .Version }}, not a pre-release).
// It fails when src does not build that platform (not among a build's goos and goarch, or ignored).
func Config(src []byte, dist, goos, goarch string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("reading .goreleaser.yml: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New(".goreleaser.yml is not a mapping")
	}
	top := doc.Content[0]
	builds := get(top, "builds")
	if builds == nil || builds.Kind != yaml.SequenceNode || len(builds.Content) == 0 {
		return nil, errors.New(".goreleaser.yml has no builds")
	}
	for i, b := range builds.Content {
		if b.Kind != yaml.MappingNode {
			return nil, fmt.Errorf(".goreleaser.yml: builds[%d] is not a mapping", i)
		}
		if !lists(get(b, "goos"), goos) || !lists(get(b, "goarch"), goarch) || ignored(get(b, "ignore"), goos, goarch) {
			return nil, fmt.Errorf(".goreleaser.yml: builds[%d] does not build %s_%s", i, goos, goarch)
		}
		set(b, "goos", seq(goos))
		set(b, "goarch", seq(goarch))
	}
	set(top, "dist", scalar(dist))
	snapshot := &yaml.Node{Kind: yaml.MappingNode}
	set(snapshot, "version_template", scalar("{{ .Version }}"))
	set(top, "snapshot", snapshot)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

func get(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func set(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, scalar(key), v)
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

func seq(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{scalar(v)}}
}

// lists reports whether the sequence n holds v.
func lists(n *yaml.Node, v string) bool {
	if n == nil || n.Kind != yaml.SequenceNode {
		return false
	}
	for _, e := range n.Content {
		if e.Value == v {
			return true
		}
	}
	return false
}

// ignored reports whether a build's ignore list leaves out goos_goarch.
func ignored(n *yaml.Node, goos, goarch string) bool {
	if n == nil {
		return false
	}
	for _, e := range n.Content {
		if o, a := get(e, "goos"), get(e, "goarch"); (o == nil || o.Value == goos) && (a == nil || a.Value == goarch) {
			return true
		}
	}
	return false
}

// ReadSums reads a SHA256SUMS file ("<hex>  <name>" lines) into name -> hex.
func ReadSums(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if _, err := hex.DecodeString(sum); !ok || err != nil || len(sum) != sha256.Size*2 || name == "" {
			return nil, fmt.Errorf("%s: not a SHA256SUMS line: %q", path, sc.Text())
		}
		sums[name] = sum
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(sums) == 0 {
		return nil, fmt.Errorf("%s lists nothing", path)
	}
	return sums, nil
}

// FileSHA256 is the SHA-256 of a file's content, in hex.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Verify checks that the archive's SHA-256 is the one SHA256SUMS gives for it.
func (r Release) Verify() error {
	name := filepath.Base(r.Archive)
	want, ok := r.Sums[name]
	if !ok {
		return fmt.Errorf("%s does not list %s", filepath.Base(r.SumsFile), name)
	}
	got, err := FileSHA256(r.Archive)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s has SHA-256 %s, %s says %s", name, got, filepath.Base(r.SumsFile), want)
	}
	return nil
}

// FilesystemMirror copies the archive into dir in the packed layout of Terraform's filesystem_mirror
// (dir/registry.terraform.io/pgnvme/pgnvme/terraform-provider-pgnvme_<version>_<os>_<arch>.zip) and
// returns the copy's path.
func (r Release) FilesystemMirror(dir string) (string, error) {
	to := filepath.Join(dir, Hostname, Namespace, Type)
	if err := os.MkdirAll(to, 0o755); err != nil {
		return "", err
	}
	b, err := os.ReadFile(r.Archive)
	if err != nil {
		return "", err
	}
	dst := filepath.Join(to, filepath.Base(r.Archive))
	return dst, os.WriteFile(dst, b, 0o644)
}

// FilesystemMirrorConfig is a CLI configuration that installs pgnvme/pgnvme from the filesystem mirror dir
// and every other provider as usual.
func FilesystemMirrorConfig(dir string) string {
	return fmt.Sprintf(`provider_installation {
  filesystem_mirror {
    path    = %q
    include = ["%s/%s/%s"]
  }
  direct {
    exclude = ["%s/%s/%s"]
  }
}
`, dir, Hostname, Namespace, Type, Hostname, Namespace, Type)
}
