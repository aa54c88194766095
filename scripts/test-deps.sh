#!/usr/bin/env bash
# Checks everything `make test` needs on Debian 12 and, as root, installs with apt what is missing.
# Not root and something missing: stops with the exact command to run. What apt cannot install here
# (Terraform, moto) is never installed: the script names the command and stops.
#
# Each need is one `need` line below: add a tool by adding a line (and, when its check or version needs more
# than one command, a small function like stunnel_bin).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

PG_BIN=/usr/lib/postgresql/15/bin

# The stunnel4 package installs `stunnel4` on Debian 12 and `stunnel` elsewhere; prints the one on PATH.
stunnel_bin() { command -v stunnel4 || command -v stunnel; }
stunnel_version() { "$(stunnel_bin)" -version 2>&1 | awk '/^stunnel / && !seen++'; }

names=() checks=() versions=() packages=() otherwise=()

# need NAME CHECK VERSION PACKAGES [OTHERWISE]
#   CHECK     shell code that succeeds when NAME is there (run with eval, output discarded)
#   VERSION   shell code that prints NAME's version on its first line
#   PACKAGES  the Debian packages that provide NAME ("" when apt cannot install it here)
#   OTHERWISE the exact command (or step) that provides NAME when PACKAGES is ""
need() {
	names+=("$1") checks+=("$2") versions+=("$3") packages+=("$4") otherwise+=("${5:-}")
}

need make 'command -v make' 'make --version' make
need postgresql-15 "[ -x $PG_BIN/postgres ] && [ -x $PG_BIN/pgbench ] && [ -x $PG_BIN/initdb ]" \
	"$PG_BIN/postgres --version" postgresql-15
need postgresql-client-15 "[ -x $PG_BIN/psql ] && [ -x $PG_BIN/pg_basebackup ]" "$PG_BIN/psql --version" postgresql-client-15
# PostgreSQL refuses to run as root: tests run as root start its processes as this user (postgresql-common makes it).
need postgres-user 'id postgres' 'id postgres' postgresql-common
# The archive proof: pgBackRest writes to the bucket the provider made, through stunnel's TLS in front of moto.
need pgbackrest 'command -v pgbackrest' 'pgbackrest version' pgbackrest
need stunnel stunnel_bin stunnel_version stunnel4
# The tests drive the real CLI: 1.11 or later (write-only attributes).
need terraform 'command -v terraform' 'terraform version 2>/dev/null' '' \
	'install Terraform 1.11 or later and put terraform on PATH'
need moto "python3 -c 'import moto.server'" "python3 -c 'import moto; print(\"moto\", moto.__version__)'" '' \
	"python3 -m pip install 'moto[server]'"

# has I: whether need I is there.
has() { eval "${checks[$1]}" >/dev/null 2>&1; }

# missing_packages: the Debian packages of the needs that are missing, each once.
missing_packages() {
	local i p out=()
	for i in "${!names[@]}"; do
		has "$i" && continue
		for p in ${packages[$i]}; do
			[[ " ${out[*]} " == *" $p "* ]] || out+=("$p")
		done
	done
	echo "${out[*]}"
}

apt_pkgs=$(missing_packages)
apt_cmd="apt-get update && apt-get install -y $apt_pkgs"
if [ -n "$apt_pkgs" ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
	echo "installing: $apt_pkgs"
	apt-get update -qq
	# shellcheck disable=SC2086 # one word per package
	apt-get install -y -qq $apt_pkgs
	apt_cmd="apt-get install -y $apt_pkgs  (it ran and did not provide it)"
elif [ -n "$apt_pkgs" ] && [ "$(id -u)" -ne 0 ]; then
	apt_cmd="sudo apt-get update && sudo apt-get install -y $apt_pkgs"
fi

# The Debian package starts a cluster of its own (and starts it again on boot); the tests start their own
# servers on free ports, so it only takes memory.
if [ "$(id -u)" -eq 0 ] && command -v pg_lsclusters >/dev/null &&
	pg_lsclusters -h | awk '$1 == 15 && $2 == "main" && $4 == "online" { on = 1 } END { exit !on }'; then
	echo "stopping the Debian package's own PostgreSQL cluster 15 main"
	pg_ctlcluster 15 main stop
fi

# One line per need: its version, or what to run.
fail=0
for i in "${!names[@]}"; do
	if has "$i"; then
		printf '%-21s %s\n' "${names[$i]}" "$(eval "${versions[$i]}" 2>/dev/null | awk 'NR == 1')"
		continue
	fi
	fail=1
	if [ -n "${packages[$i]}" ]; then
		printf '%-21s MISSING: %s\n' "${names[$i]}" "$apt_cmd"
	else
		printf '%-21s MISSING: %s\n' "${names[$i]}" "${otherwise[$i]}"
	fi
done
if [ "$fail" != 0 ]; then
	echo "The tests cannot run without the missing parts above. Run the commands shown, then make test again."
	exit 1
fi
