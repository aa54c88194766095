package release_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/acctest/tfwork"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/release"
)

// example is the configuration every install plans: the worked example of the README, data sources on the
// embedded catalog only (no AWS, no PostgreSQL) and no provider but this one.
const example = "examples/quickstart"

// TestInstallFromReleaseArchives builds this machine's release archive with the repository's .goreleaser.yml
// (release.Build: the zip, SHA256SUMS with the registry manifest, and SHA256SUMS signed by the configuration's
// `signs` section with a GPG key made for the test), serves it over HTTPS on 127.0.0.1 (a certificate
// Terraform trusts through SSL_CERT_FILE) and installs it with `terraform init`, no dev_overrides and no
// -plugin-dir, three ways a user installs a provider:
//
//   - network_mirror: Terraform's provider network mirror protocol, the archive's hashes in the mirror's
//     index taken from SHA256SUMS as zh: hashes; Terraform checks the download against them and records in
//     the lock file the h1: hash of the package it unpacked (a mirror's hashes are not signed, so Terraform
//     records no zh: from them).
//   - registry: the provider registry protocol, standing in for registry.terraform.io through a `host` block
//     of the CLI configuration: the download's SHA-256, SHA256SUMS and its signature, as the registry serves a
//     published release. Only a signed SHA256SUMS makes Terraform record its zh: hashes in the lock file.
//   - filesystem_mirror: the zip in a filesystem_mirror directory (the README's way to install an archive),
//     with the lock file the registry install wrote, as a team that commits its lock file installs: Terraform
//     checks the archive against the lock file's hashes.
//
// Each installs then plans the example. The same archives tampered with (one byte of the zip changed, or a
// SHA256SUMS that disagrees with it, or a SHA256SUMS that is not the one signed) must make `terraform init`
// fail: the checksums are checked, not only recorded.
func TestInstallFromReleaseArchives(t *testing.T) {
	root, err := tfwork.Root()
	if err != nil {
		t.Fatal(err)
	}
	version, err := tfwork.ChangelogVersion(root)
	if err != nil {
		t.Fatal(err)
	}
	tf := terraformPath(t)
	key := newGPGKey(t)
	protocols := manifestProtocols(t, root)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rel, err := release.Build(ctx, release.Options{
		Root: root, Dist: filepath.Join(t.TempDir(), "dist"), Version: version,
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH,
		GPGFingerprint: key.fingerprint, Env: []string{"GNUPGHOME=" + key.home},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("goreleaser release --snapshot for %s_%s took %s", runtime.GOOS, runtime.GOARCH, time.Since(start).Round(time.Millisecond))
	checkRelease(t, root, rel)
	zipName := filepath.Base(rel.Archive)
	// A signed SHA256SUMS vouches for every file it lists: Terraform records a zh: hash for each line.
	var signed []string
	for _, sum := range rel.Sums {
		signed = append(signed, "zh:"+sum)
	}
	h1, err := dirhash.HashZip(rel.Archive, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, rel.Dir, version, protocols, key)
	installs := time.Now()

	t.Run("network_mirror", func(t *testing.T) {
		dir := workdir(t, root)
		out := mustInit(t, tf, dir, srv.networkMirrorConfig(), srv.caFile)
		wantInstalled(t, out, version, "(verified checksum)")
		wantLock(t, dir, version, []string{h1})
		plan(t, tf, dir, srv.networkMirrorConfig(), srv.caFile)
	})

	var registryLock []byte
	t.Run("registry", func(t *testing.T) {
		dir := workdir(t, root)
		out := mustInit(t, tf, dir, srv.registryConfig(), srv.caFile)
		wantInstalled(t, out, version, "(self-signed, key ID "+key.id+")")
		wantLock(t, dir, version, append([]string{h1}, signed...))
		plan(t, tf, dir, srv.registryConfig(), srv.caFile)
		lock, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		registryLock = lock
	})

	t.Run("filesystem_mirror", func(t *testing.T) {
		if registryLock == nil {
			t.Fatal("needs the lock file of the registry install")
		}
		mirror := t.TempDir()
		if _, err := rel.FilesystemMirror(mirror); err != nil {
			t.Fatal(err)
		}
		dir := workdir(t, root)
		writeFile(t, filepath.Join(dir, ".terraform.lock.hcl"), registryLock)
		cfg := release.FilesystemMirrorConfig(mirror)
		out := mustInit(t, tf, dir, cfg, "")
		// A filesystem mirror authenticates nothing itself; the lock file's hashes are checked (see the
		// tampered case) and kept.
		wantInstalled(t, out, version, "(unauthenticated)")
		wantLock(t, dir, version, append([]string{h1}, signed...))
		plan(t, tf, dir, cfg, "")
	})
	t.Logf("three installs and plans took %s", time.Since(installs).Round(time.Millisecond))

	// Each case installs a copy of the release changed in one way, and must fail with Terraform's words.
	sumsName := filepath.Base(rel.SumsFile)
	flipByte := func(t *testing.T, dir string) { flip(t, filepath.Join(dir, zipName)) }
	repacked := func(t *testing.T, dir string) {
		// A sound zip whose binary has one byte changed: a flipped byte of the zip itself fails zip's own
		// CRC check before any checksum is compared.
		repack(t, filepath.Join(dir, zipName))
	}
	wrongSum := func(t *testing.T, dir string) {
		// SHA256SUMS disagrees with the zip: one hex digit of its line changed (signed again, so that only
		// the checksum is wrong).
		p := filepath.Join(dir, sumsName)
		sum := rel.Sums[zipName]
		c := "0"
		if sum[0] == '0' {
			c = "1"
		}
		replaceIn(t, p, sum, c+sum[1:])
		key.sign(t, p)
	}
	unsigned := func(t *testing.T, dir string) {
		// SHA256SUMS lists one more file than the one signed; the zip's line is right.
		b, err := os.ReadFile(filepath.Join(dir, sumsName))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, sumsName), append(b, []byte(strings.Repeat("ab", 32)+"  extra.zip\n")...))
	}
	for _, tc := range []struct {
		name   string
		tamper func(*testing.T, string)
		// how: "network_mirror", "registry" or "filesystem_mirror" (with the registry's lock file).
		how  string
		want string
	}{
		{"network_mirror_archive_byte", flipByte, "network_mirror", "provider package doesn't match the expected checksum \"zh:"},
		{"network_mirror_sums_disagree", wrongSum, "network_mirror", "provider package doesn't match the expected checksum \"zh:"},
		{"registry_archive_byte", flipByte, "registry", "archive has incorrect checksum"},
		{"registry_sums_disagree", wrongSum, "registry", "archive has incorrect checksum"},
		{"registry_sums_not_signed", unsigned, "registry", "error checking signature"},
		{"filesystem_mirror_binary_byte", repacked, "filesystem_mirror", "doesn't match any of the checksums previously recorded in the dependency lock file"},
	} {
		t.Run("tampered_"+tc.name, func(t *testing.T) {
			copyDir := t.TempDir()
			for name := range rel.Sums {
				if strings.HasSuffix(name, ".zip") {
					copyFile(t, filepath.Join(rel.Dir, name), filepath.Join(copyDir, name))
				}
			}
			copyFile(t, rel.SumsFile, filepath.Join(copyDir, sumsName))
			copyFile(t, rel.SignatureFile, filepath.Join(copyDir, sumsName+".sig"))
			tc.tamper(t, copyDir)
			dir := workdir(t, root)
			var cfg, ca string
			switch tc.how {
			case "network_mirror", "registry":
				bad := serve(t, copyDir, version, protocols, key)
				cfg, ca = bad.networkMirrorConfig(), bad.caFile
				if tc.how == "registry" {
					cfg = bad.registryConfig()
				}
			case "filesystem_mirror":
				if registryLock == nil {
					t.Fatal("needs the lock file of the registry install")
				}
				writeFile(t, filepath.Join(dir, ".terraform.lock.hcl"), registryLock)
				mirror := t.TempDir()
				copyFile(t, filepath.Join(copyDir, zipName),
					filepath.Join(mirror, release.Hostname, release.Namespace, release.Type, zipName))
				cfg = release.FilesystemMirrorConfig(mirror)
			}
			out, err := terraform(tf, dir, cfg, ca, "init", "-input=false", "-no-color")
			if err == nil {
				t.Fatalf("terraform init installed a tampered release:\n%s", out)
			}
			if !strings.Contains(strings.Join(strings.Fields(out), " "), tc.want) {
				t.Fatalf("terraform init failed, but without %q:\n%s", tc.want, out)
			}
			if _, err := os.Stat(filepath.Join(dir, ".terraform", "providers", release.Hostname, release.Namespace, release.Type)); err == nil {
				t.Errorf("the tampered package was left installed under .terraform/providers")
			}
			t.Logf("refused as expected: %s", firstError(out))
		})
	}
}

// checkRelease checks what GoReleaser wrote against the repository: the zip as SHA256SUMS says, holding the
// binary terraform-provider-pgnvme_v<version>, and the manifest in SHA256SUMS being
// terraform-registry-manifest.json (which the release uploads under that name).
func checkRelease(t *testing.T, root string, rel release.Release) {
	t.Helper()
	if err := rel.Verify(); err != nil {
		t.Fatal(err)
	}
	manifest, err := release.FileSHA256(filepath.Join(root, "terraform-registry-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got := rel.Sums[release.ManifestName(rel.Version)]; got != manifest {
		t.Errorf("SHA256SUMS gives %s for %s, terraform-registry-manifest.json is %s", got, release.ManifestName(rel.Version), manifest)
	}
	if len(rel.Sums) != 2 {
		t.Errorf("SHA256SUMS lists %d files, want the archive and the manifest: %v", len(rel.Sums), rel.Sums)
	}
	zr, err := zip.OpenReader(rel.Archive)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	// GoReleaser's default files (README, LICENSE, CHANGELOG) beside the binary Terraform runs.
	var files []string
	for _, f := range zr.File {
		files = append(files, f.Name)
	}
	if bin := release.ProjectName + "_v" + rel.Version; !slices.Contains(files, bin) {
		t.Errorf("the archive holds %v, not %s", files, bin)
	}
	t.Logf("%s holds %v", filepath.Base(rel.Archive), files)
}

// manifestProtocols is the plugin protocols terraform-registry-manifest.json declares, which the registry
// serves with each version.
func manifestProtocols(t *testing.T, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "terraform-registry-manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Metadata struct {
			ProtocolVersions []string `json:"protocol_versions"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &m); err != nil || len(m.Metadata.ProtocolVersions) == 0 {
		t.Fatalf("terraform-registry-manifest.json names no protocol_versions (%v)", err)
	}
	return m.Metadata.ProtocolVersions
}

// server serves one release directory (its zips, SHA256SUMS and signature, read on every request) over HTTPS
// as a provider network mirror under /mirror/ and as the provider registry under /v1/providers/.
type server struct {
	url    string
	caFile string
}

func serve(t *testing.T, dir, version string, protocols []string, key gpgKey) server {
	t.Helper()
	sumsName := release.SumsName(version)
	sums := func() (map[string]string, error) { return release.ReadSums(filepath.Join(dir, sumsName)) }
	var base string
	mux := http.NewServeMux()
	mux.Handle("GET /files/", http.StripPrefix("/files/", http.FileServer(http.Dir(dir))))
	// The network mirror protocol: the versions, then each version's archives with the hashes to accept.
	mirror := fmt.Sprintf("/mirror/%s/%s/%s/", release.Hostname, release.Namespace, release.Type)
	mux.HandleFunc("GET "+mirror+"index.json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"versions": map[string]any{version: map[string]any{}}})
	})
	mux.HandleFunc("GET "+mirror+"{file}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("file") != version+".json" {
			http.NotFound(w, r)
			return
		}
		s, err := sums()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		archives := map[string]any{}
		for name, sum := range s {
			if p, ok := platformOf(name, version); ok {
				archives[p] = map[string]any{"url": base + "/files/" + name, "hashes": []string{"zh:" + sum}}
			}
		}
		writeJSON(w, map[string]any{"archives": archives})
	})
	// The provider registry protocol: versions with their platforms, and a platform's download.
	reg := fmt.Sprintf("/v1/providers/%s/%s/", release.Namespace, release.Type)
	mux.HandleFunc("GET "+reg+"versions", func(w http.ResponseWriter, r *http.Request) {
		s, err := sums()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var platforms []map[string]string
		for name := range s {
			if p, ok := platformOf(name, version); ok {
				goos, goarch, _ := strings.Cut(p, "_")
				platforms = append(platforms, map[string]string{"os": goos, "arch": goarch})
			}
		}
		writeJSON(w, map[string]any{"versions": []any{map[string]any{"version": version, "protocols": protocols, "platforms": platforms}}})
	})
	mux.HandleFunc("GET "+reg+"{version}/download/{os}/{arch}", func(w http.ResponseWriter, r *http.Request) {
		s, err := sums()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		name := release.ArchiveName(version, r.PathValue("os"), r.PathValue("arch"))
		if r.PathValue("version") != version || s[name] == "" {
			http.NotFound(w, r)
			return
		}
		writeJSON(w, map[string]any{
			"protocols": protocols, "os": r.PathValue("os"), "arch": r.PathValue("arch"),
			// The SHA-256 as SHA256SUMS gives it, as the registry reads it when a release is published.
			"filename": name, "download_url": base + "/files/" + name, "shasum": s[name],
			"shasums_url":           base + "/files/" + sumsName,
			"shasums_signature_url": base + "/files/" + sumsName + ".sig",
			"signing_keys": map[string]any{"gpg_public_keys": []any{map[string]string{
				"key_id": key.id, "ascii_armor": key.armor}}},
		})
	})
	srv := httptest.NewTLSServer(mux)
	t.Cleanup(srv.Close)
	base = srv.URL
	ca := filepath.Join(t.TempDir(), "ca.pem")
	writeFile(t, ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	return server{url: srv.URL, caFile: ca}
}

// platformOf is the <os>_<arch> of a release archive's file name.
func platformOf(name, version string) (string, bool) {
	prefix := release.ProjectName + "_" + version + "_"
	if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, ".zip") {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(name, prefix), ".zip"), true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// networkMirrorConfig installs pgnvme/pgnvme from the network mirror only.
func (s server) networkMirrorConfig() string {
	return fmt.Sprintf("disable_checkpoint = true\n\nprovider_installation {\n  network_mirror {\n    url = %q\n  }\n}\n",
		s.url+"/mirror/")
}

// registryConfig sends Terraform's requests for registry.terraform.io's provider registry to the server.
func (s server) registryConfig() string {
	return fmt.Sprintf("disable_checkpoint = true\n\nhost %q {\n  services = {\n    \"providers.v1\" = %q\n  }\n}\n",
		release.Hostname, s.url+"/v1/providers/")
}

// gpgKey is a signing key made for one test in a GnuPG home of its own.
type gpgKey struct {
	home, fingerprint, id, armor string
}

// newGPGKey makes an Ed25519 signing key, valid for a day, and stops the GnuPG agent it started at the end.
func newGPGKey(t *testing.T) gpgKey {
	t.Helper()
	if _, err := exec.LookPath("gpg"); err != nil {
		t.Fatalf("the release's SHA256SUMS is signed with gpg, as the release workflow signs it: install gnupg (scripts/test-deps.sh does): %v", err)
	}
	// A short path: the agent's socket lives in the home, and a socket's path is limited to 107 bytes.
	home, err := os.MkdirTemp("", "gpg-")
	if err != nil {
		t.Fatal(err)
	}
	k := gpgKey{home: home}
	t.Cleanup(func() {
		_ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		os.RemoveAll(home)
	})
	k.gpg(t, "--passphrase", "", "--pinentry-mode", "loopback",
		"--quick-gen-key", "pgnvme release test <tf-acc@pgnvme.invalid>", "ed25519", "sign", "1d")
	for _, line := range strings.Split(k.gpg(t, "--with-colons", "--list-secret-keys"), "\n") {
		if f := strings.Split(line, ":"); f[0] == "fpr" && len(f) > 9 && k.fingerprint == "" {
			k.fingerprint = f[9]
		}
	}
	if len(k.fingerprint) != 40 {
		t.Fatalf("no fingerprint for the key made in %s", home)
	}
	k.id = k.fingerprint[24:]
	k.armor = k.gpg(t, "--armor", "--export", k.fingerprint)
	return k
}

func (k gpgKey) gpg(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("gpg", append([]string{"--batch", "--homedir", k.home}, args...)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("gpg %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

// sign writes path's detached signature to path.sig, as the release's `signs` section does.
func (k gpgKey) sign(t *testing.T, path string) {
	t.Helper()
	k.gpg(t, "--yes", "--local-user", k.fingerprint, "--output", path+".sig", "--detach-sign", path)
}

// workdir is a copy of the example, without anything Terraform wrote there.
func workdir(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	if err := tfwork.CopyTree(filepath.Join(root, example), dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// terraform runs the CLI in dir with a CLI configuration of the given text and, when caFile is not "", the
// certificates it trusts for HTTPS; nothing from the machine's own configuration or plugin cache.
func terraform(tf, dir, cliConfig, caFile string, args ...string) (string, error) {
	cfg := filepath.Join(dir, ".terraformrc")
	if err := os.WriteFile(cfg, []byte(cliConfig), 0o644); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tf, args...)
	cmd.Dir = dir
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool {
		return strings.HasPrefix(e, "TF_PLUGIN_CACHE_DIR=") || strings.HasPrefix(e, "TF_DATA_DIR=") ||
			strings.HasPrefix(e, "SSL_CERT_FILE=") || strings.HasPrefix(e, "SSL_CERT_DIR=")
	}), tfwork.CLIEnv(cfg)...)
	if caFile != "" {
		cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+caFile)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustInit(t *testing.T, tf, dir, cliConfig, caFile string) string {
	t.Helper()
	start := time.Now()
	out, err := terraform(tf, dir, cliConfig, caFile, "init", "-input=false", "-no-color")
	if err != nil {
		t.Fatalf("terraform init: %v\n%s", err, out)
	}
	t.Logf("terraform init took %s", time.Since(start).Round(time.Millisecond))
	return out
}

func plan(t *testing.T, tf, dir, cliConfig, caFile string) {
	t.Helper()
	start := time.Now()
	out, err := terraform(tf, dir, cliConfig, caFile, "plan", "-input=false", "-no-color")
	if err != nil {
		t.Fatalf("terraform plan: %v\n%s", err, out)
	}
	if !strings.Contains(out, "instance_type") {
		t.Fatalf("terraform plan does not show the example's outputs:\n%s", out)
	}
	t.Logf("terraform plan took %s", time.Since(start).Round(time.Millisecond))
}

func wantInstalled(t *testing.T, out, version, how string) {
	t.Helper()
	want := fmt.Sprintf("- Installed %s/%s v%s %s", release.Namespace, release.Type, version, how)
	if !strings.Contains(out, want) {
		t.Fatalf("terraform init did not say %q:\n%s", want, out)
	}
}

var (
	lockBlock = regexp.MustCompile(`(?s)provider "` + regexp.QuoteMeta(release.Hostname+"/"+release.Namespace+"/"+release.Type) + `" \{(.*?)\n\}`)
	lockVer   = regexp.MustCompile(`\bversion\s*=\s*"([^"]+)"`)
	lockHash  = regexp.MustCompile(`"((?:h1|zh):[^"]+)"`)
)

// wantLock checks that the lock file selects version with exactly the hashes want.
func wantLock(t *testing.T, dir, version string, want []string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	m := lockBlock.FindSubmatch(b)
	if m == nil {
		t.Fatalf("the lock file has no entry for the provider:\n%s", b)
	}
	if v := lockVer.FindSubmatch(m[1]); v == nil || string(v[1]) != version {
		t.Errorf("the lock file selects %q, want %s:\n%s", v, version, b)
	}
	var got []string
	for _, h := range lockHash.FindAllSubmatch(m[1], -1) {
		got = append(got, string(h[1]))
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("the lock file's hashes are %v, want %v:\n%s", got, want, b)
	}
}

func terraformPath(t *testing.T) string {
	t.Helper()
	p, err := tfwork.TerraformPath()
	if err != nil {
		t.Fatalf("this test runs the Terraform CLI: %v", err)
	}
	return p
}

// flip changes the byte in the middle of a file.
func flip(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	writeFile(t, path, b)
}

// repack writes the zip at path again with one byte of the provider's binary changed.
func repack(t *testing.T, path string) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	changed := false
	for _, f := range zr.File {
		b, err := readZipFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(f.Name, release.ProjectName) {
			b[len(b)/2] ^= 0x01
			changed = true
		}
		hdr := f.FileHeader
		hdr.Method = zip.Store // quick; Terraform reads either
		w, err := zw.CreateHeader(&hdr)
		if err == nil {
			_, err = w.Write(b)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if !changed {
		t.Fatalf("%s holds no %s binary", path, release.ProjectName)
	}
	writeFile(t, path, buf.Bytes())
}

func readZipFile(f *zip.File) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func replaceIn(t *testing.T, path, old, new string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s does not contain %s", path, old)
	}
	writeFile(t, path, []byte(strings.Replace(string(b), old, new, 1)))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, b)
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// firstError is Terraform's first error, its summary and detail on one line.
func firstError(out string) string {
	i := strings.Index(out, "Error:")
	if i < 0 {
		return strings.TrimSpace(out)
	}
	return strings.Join(strings.Fields(out[i:]), " ")
}
