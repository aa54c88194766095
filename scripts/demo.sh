#!/usr/bin/env bash
# make demo: builds the provider, points Terraform at it with a throwaway CLI configuration (dev_overrides),
# then
#   1. plans the talk's workload from the embedded catalog (examples/quickstart; no AWS credentials), and
#   2. creates a three-node local cluster tuned for this machine, runs the talk's pgbench script against it
#      and prints TPS, latency percentiles, wait events and synchronous_standby_names
#      (examples/local-cluster). `make demo-destroy` removes the cluster.
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

destroy() {
	if [ -d "$work/local-cluster" ]; then
		(cd "$work/local-cluster" && terraform destroy -auto-approve -input=false)
	fi
}
if [ "${1:-}" = "destroy" ]; then
	destroy
	exit 0
fi

echo "== 1. the talk's workload, planned from the embedded catalog"
rm -rf "$work/quickstart"
cp -r "$root/examples/quickstart" "$work/quickstart"
(cd "$work/quickstart" && terraform apply -auto-approve -input=false)

echo
echo "== 2. a three-node local cluster under ANY 1, tuned for this machine, and the talk's pgbench"
mkdir -p "$work/local-cluster"
cp "$root/examples/local-cluster/main.tf" "$work/local-cluster/main.tf"
# PostgreSQL runs as the postgres user when this runs as root: the data directory must be reachable.
data_root="${PGNVME_DEMO_DIR:-/tmp/pgnvme-demo}"
mkdir -p "$data_root"
chmod 0755 "$data_root"
vcpus=$(nproc)
mem_kib=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
disk_kib=$(df -Pk "$data_root" | awk 'NR == 2 {print $4}')
# Three nodes share this machine: each is tuned for a third of its memory and free disk.
memory_gib=$(awk -v k="$mem_kib" 'BEGIN {printf "%.1f", k / 1048576 / 3}')
disk_gib=$(awk -v k="$disk_kib" 'BEGIN {d = k / 1048576 / 3; if (d > 200) d = 200; printf "%.0f", d}')
port_base="${PGNVME_DEMO_PORT_BASE:-54320}"
cat >"$work/local-cluster/terraform.tfvars" <<VARS
data_dir   = "$data_root/cluster"
port_base  = $port_base
vcpus      = $vcpus
memory_gib = $memory_gib
disk_gib   = $disk_gib
VARS
echo "this machine: $vcpus vCPUs; per node: $memory_gib GiB memory, $disk_gib GiB disk; ports $port_base-$((port_base + 2))"
(cd "$work/local-cluster" && terraform apply -auto-approve -input=false)
echo
echo "The cluster keeps running: connect with psql \"postgresql://postgres@127.0.0.1:$port_base/postgres\"; remove it with make demo-destroy."
