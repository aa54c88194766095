#!/usr/bin/env bash
# make release-check: what a release and the registry need beyond the tests, with the versions pinned in
# tools/go.mod (built from the Go module proxy with this Go; nothing else is downloaded):
#   goreleaser check   .goreleaser.yml is valid for the pinned GoReleaser
#   actionlint         .github/workflows/*.yml (their run: scripts too, with shellcheck when it is on PATH)
#   tflint             its bundled Terraform ruleset only: every rule on each module under modules/, the
#                      recommended ones on the modules' examples and test fixtures and on examples/
# terraform validate of every example directory, and of the registry trees `make modules-dist` writes, is
# part of `make test` (internal/moduletest), against the provider built from this checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
tool() { "$GO" tool -modfile=tools/go.mod "$@"; }

echo "== goreleaser check ($(tool goreleaser --version 2>&1 | awk '/^GitVersion:/ {print $2}'))"
tool goreleaser check

echo "== actionlint $(tool actionlint -version | awk 'NR == 1')"
tool actionlint -color=false

tflint=$(tool -n tflint) # the built binary, run once per directory
echo "== $("$tflint" --version | awk 'NR == 1')"
for dir in modules/*/; do
	echo "tflint $dir (every rule)"
	"$tflint" --chdir="$dir" --config="$PWD/tools/tflint/modules.hcl" --format=compact
done
for dir in modules/*/examples/*/ modules/*/tests/*/; do
	[ -d "$dir" ] || continue
	echo "tflint $dir (recommended rules)"
	"$tflint" --chdir="$dir" --config="$PWD/tools/tflint/recommended.hcl" --format=compact
done
echo "tflint examples/ (recommended rules but the three that do not fit documentation snippets)"
"$tflint" --recursive --chdir=examples --config="$PWD/tools/tflint/recommended.hcl" --format=compact \
	--disable-rule=terraform_required_version --disable-rule=terraform_required_providers \
	--disable-rule=terraform_unused_declarations
echo "release checks passed"
