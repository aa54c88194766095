#!/usr/bin/env bash
# make release-check: what a release and the registry need beyond the tests, with the versions pinned in
# tools/go.mod (built from the Go module proxy with this Go; nothing else is downloaded):
#   goreleaser check   .goreleaser.yml is valid for the pinned GoReleaser
#   actionlint         .github/workflows/*.yml (their run: scripts too, with shellcheck when it is on PATH)
#   tflint             its bundled Terraform ruleset only: every rule on each module under modules/, the
#                      recommended ones on the modules' examples and test fixtures and on examples/
#   crosscheck         the provider type-checked for every GOOS/GOARCH .goreleaser.yml releases (see below)
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
# Every target .goreleaser.yml builds (its goos x goarch, less its ignore entries and what this Go cannot build,
# which GoReleaser skips too: darwin/arm, windows/arm), checked as GoReleaser builds it (CGO off, GOARM=6): a
# system call or build constraint only Linux has, or an int constant too big for 32 bits (386, arm), fails here
# and not at the release. tools/crosscheck type-checks the provider and every package it imports (about 630)
# from source with each target's files and sizes: the compiler's own checks, without code generation and
# link, which only GoReleaser's release build runs for these targets. Measured on 2 cores (2026-12-07, busy
# with other builds): 181 CPU-seconds for the 13 targets (256 with the tool built into an empty build cache),
# at most 1.4 GB, whatever the cache holds; compiling instead (`go vet .` per target, no link) took 412
# CPU-seconds for one target with an empty cache (some 90 CPU-minutes for the 13 on a fresh machine) and
# 2-13 with a warm one, and the link ~3 more a target.
targets=$(awk '
	/^[^ #]/ { inbuilds = ($1 == "builds:") }
	!inbuilds { next }
	{ gsub(/["\047]/, "") }
	/^    [a-z_0-9]+:/ { key = $1 }
	key == "goos:" && /^      - / { goos[++ng] = $2 }
	key == "goarch:" && /^      - / { goarch[++na] = $2 }
	key == "ignore:" && /^      - / { ni++; sub(/- /, "") } # an entry: goos, goarch (unset: any); others narrow it
	key == "ignore:" && ni && /:/ { f = $1; sub(/:$/, "", f); ig[ni, f] = $2; if (f != "goos" && f != "goarch") narrow[ni] = 1 }
	END {
		for (i = 1; i <= ng; i++)
			for (j = 1; j <= na; j++) {
				skip = 0
				for (k = 1; k <= ni; k++)
					if (!narrow[k] && (ig[k, "goos"] == "" || ig[k, "goos"] == goos[i]) && (ig[k, "goarch"] == "" || ig[k, "goarch"] == goarch[j]))
						skip = 1
				if (!skip) print goos[i] "/" goarch[j]
			}
	}' .goreleaser.yml)
known=$("$GO" tool dist list)
build=$(grep -Fx -f <(echo "$known") <<<"$targets" || true)
skipped=$(grep -Fvx -f <(echo "$known") <<<"$targets" || true)
if [ -z "$build" ]; then
	echo "no GOOS/GOARCH read from .goreleaser.yml's builds"
	exit 1
fi
echo "== crosscheck: $(wc -w <<<"$build") targets of .goreleaser.yml${skipped:+ (not Go targets, skipped as GoReleaser does: ${skipped//$'\n'/ })}"
# shellcheck disable=SC2086 # one argument per target
"$GO" -C tools run ./crosscheck -dir "$PWD" -pkg . $build
echo "release checks passed"
