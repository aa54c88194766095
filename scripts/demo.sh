#!/usr/bin/env bash
# make demo: builds the provider, points Terraform at it with a throwaway CLI configuration (dev_overrides),
# and applies examples/quickstart, which plans the talk's workload with no AWS credentials.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$root/.demo"
mkdir -p "$work"
cat >"$work/terraformrc" <<RC
provider_installation {
  dev_overrides {
    "pgnvme/pgnvme" = "$root/bin"
  }
  direct {}
}
RC
export TF_CLI_CONFIG_FILE="$work/terraformrc"
export TF_IN_AUTOMATION=1
# Plans from the embedded catalog: make sure no ambient AWS setting changes the answer.
unset AWS_PROFILE AWS_REGION AWS_DEFAULT_REGION
rm -rf "$work/quickstart"
cp -r "$root/examples/quickstart" "$work/quickstart"
cd "$work/quickstart"
# With dev_overrides there is nothing to init; apply reads the data sources and prints the outputs.
terraform apply -auto-approve -input=false
