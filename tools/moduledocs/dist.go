package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

const (
	// providerSource is the provider whose requirement dist rewrites, as modules write it.
	providerSource = "pgnvme/pgnvme"
	// repositoryURL is where the modules live, for links out of a registry tree.
	repositoryURL = "https://github.com/pgnvme/terraform-provider-pgnvme"
)

var versionPattern = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// writeDist writes each module in dirs as out/terraform-pgnvme-<name>/ (replacing what was there) and
// returns those directories.
func writeDist(version, out string, dirs []string) ([]string, error) {
	if !versionPattern.MatchString(version) {
		return nil, fmt.Errorf("-version %q: give the released provider version as X.Y.Z, without a leading v", version)
	}
	// A relative module source that points at one of these modules becomes that module's registry address.
	modules := map[string]string{}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		if _, err := os.Stat(filepath.Join(abs, "versions.tf")); err != nil {
			return nil, fmt.Errorf("%s is not a module directory (no versions.tf): %w", d, err)
		}
		modules[abs] = filepath.Base(abs)
	}
	roots := make([]string, 0, len(modules))
	for abs := range modules {
		roots = append(roots, abs)
	}
	sort.Strings(roots)
	var written []string
	for _, root := range roots {
		dst := filepath.Join(out, "terraform-pgnvme-"+modules[root])
		if err := os.RemoveAll(dst); err != nil {
			return nil, err
		}
		if err := copyModule(root, dst, func(src string, b []byte) ([]byte, error) {
			switch {
			case strings.HasSuffix(src, ".tf"):
				return rewrite(src, b, root, version, modules)
			case filepath.Base(src) == "README.md":
				// Links into the provider's repository (../../docs/...) point at the release's files.
				return []byte(strings.ReplaceAll(string(b), "](../../", "]("+repositoryURL+"/blob/v"+version+"/")), nil
			}
			return b, nil
		}); err != nil {
			return nil, err
		}
		written = append(written, dst)
	}
	return written, nil
}

// copyModule copies the module at root into dst, leaving out what Terraform writes there (.terraform,
// lock files, state), passing every file through edit.
func copyModule(root, dst string, edit func(path string, b []byte) ([]byte, error)) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && name == ".terraform" {
			return filepath.SkipDir
		}
		if name == ".terraform.lock.hcl" || strings.HasPrefix(name, "terraform.tfstate") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: only regular files can be copied into a registry tree", path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if b, err = edit(path, b); err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// edit replaces src[start:end] with text.
type edit struct {
	start, end int
	text       string
}

// rewrite returns the .tf file at path (inside the module at root) with every pgnvme provider requirement
// set to ">= version" and every module call whose relative source leaves the file's module for one of
// modules set to its registry address at version. A relative source that leaves root for anything else
// is an error: the standalone tree would not have it.
func rewrite(path string, src []byte, root, version string, modules map[string]string) ([]byte, error) {
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	body := f.Body.(*hclsyntax.Body)
	var edits []edit
	for _, block := range body.Blocks {
		switch block.Type {
		case "terraform":
			for _, rp := range block.Body.Blocks {
				if rp.Type != "required_providers" {
					continue
				}
				for name, attr := range rp.Body.Attributes {
					e, ok, err := providerEdit(path, name, attr, version)
					if err != nil {
						return nil, err
					}
					if ok {
						edits = append(edits, e)
					}
				}
			}
		case "module":
			attr, ok := block.Body.Attributes["source"]
			if !ok {
				continue
			}
			v, d := attr.Expr.Value(nil)
			if d.HasErrors() || !v.Type().Equals(cty.String) {
				return nil, fmt.Errorf("%s: module %q: source must be a literal string", path, block.Labels[0])
			}
			source := v.AsString()
			if !strings.HasPrefix(source, "./") && !strings.HasPrefix(source, "../") {
				continue
			}
			target := filepath.Clean(filepath.Join(filepath.Dir(path), source))
			name, known := modules[target]
			switch {
			case known:
				if _, has := block.Body.Attributes["version"]; has {
					return nil, fmt.Errorf("%s: module %q has a version with a local source", path, block.Labels[0])
				}
				r := attr.Expr.Range()
				edits = append(edits, edit{r.Start.Byte, r.End.Byte,
					fmt.Sprintf("%q\n  version = %q", "pgnvme/"+name+"/pgnvme", version)})
			case target != root && !strings.HasPrefix(target, root+string(filepath.Separator)):
				return nil, fmt.Errorf("%s: module %q: source %q leaves the module for %s, which the registry tree does not have", path, block.Labels[0], source, target)
			}
		}
	}
	if len(edits) == 0 {
		return src, nil
	}
	sort.Slice(edits, func(i, j int) bool { return edits[i].start > edits[j].start })
	out := append([]byte(nil), src...)
	for _, e := range edits {
		out = append(out[:e.start:e.start], append([]byte(e.text), out[e.end:]...)...)
	}
	formatted := hclwrite.Format(out)
	if _, d := hclsyntax.ParseConfig(formatted, path, hcl.InitialPos); d.HasErrors() {
		return nil, fmt.Errorf("%s: the rewritten file does not parse (a bug in moduledocs): %w", path, d)
	}
	return formatted, nil
}

// providerEdit rewrites one required_providers entry when it is the pgnvme provider's.
func providerEdit(path, name string, attr *hclsyntax.Attribute, version string) (edit, bool, error) {
	obj, ok := attr.Expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return edit{}, false, nil
	}
	fields := map[string]string{}
	for _, item := range obj.Items {
		k, d := item.KeyExpr.Value(nil)
		v, d2 := item.ValueExpr.Value(nil)
		if d.HasErrors() || d2.HasErrors() || !k.Type().Equals(cty.String) || !v.Type().Equals(cty.String) {
			return edit{}, false, fmt.Errorf("%s: required_providers.%s must be an object of literal strings", path, name)
		}
		fields[k.AsString()] = v.AsString()
	}
	if fields["source"] != providerSource {
		return edit{}, false, nil
	}
	for k := range fields {
		if k != "source" && k != "version" {
			return edit{}, false, fmt.Errorf("%s: required_providers.%s.%s: only source and version are rewritten", path, name, k)
		}
	}
	r := obj.Range()
	text := "{\n      source  = " + strconv.Quote(providerSource) + "\n      version = " + strconv.Quote(">= "+version) + "\n    }"
	return edit{r.Start.Byte, r.End.Byte, text}, true, nil
}
