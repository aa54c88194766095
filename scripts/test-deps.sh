#!/usr/bin/env bash
# Checks everything `make test` needs on Debian 12 and, as root, installs with apt what is missing.
# Not root and something missing: stops with the exact command to run. What apt cannot install here
# (Terraform, moto) is never installed: the script names the command and stops. A need with an install
# function of its own (Patroni 4, fetched with apt from Debian 13 into /opt/pgnvme-tools) is installed by it as
# root, and otherwise named with the exact commands.
#
# Each need is one `need` line below: add a tool by adding a line (and, when its check or version needs more
# than one command, a small function like stunnel_bin).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
# Tools such as mkfs.xfs and losetup live in sbin, which a non-root PATH may lack.
PATH=$PATH:/usr/sbin:/sbin

PG_BIN=/usr/lib/postgresql/15/bin
# Patroni >= 4 (Debian 12's own patroni 3.0.2 silently reads `synchronous_mode: quorum` as off): Debian 13's
# pure-Python package, extracted here and run by Debian 12's python3 (/usr/bin/python3, not a python3 that comes
# first on PATH) with Debian 12's dependency packages. Outside the repository so that the postgres user, which
# runs Patroni, can read it wherever the checkout lives, and so that every checkout on the machine shares it.
# internal/acctest/patroni runs $PATRONI4_DIR/bin/patroni.
PATRONI4_DIR=/opt/pgnvme-tools/patroni4
PATRONI4_WORK=/opt/pgnvme-tools/patroni4.download
PATRONI4_SUITE=trixie
# Debian 12's python3 modules Patroni 4 imports (python3-etcd is `etcd`), and their distribution names.
PATRONI4_MODULES=dateutil,click,prettytable,psutil,urllib3,yaml,cdiff,psycopg2,etcd
PATRONI4_DISTS=(python-dateutil click prettytable psutil urllib3 PyYAML cdiff psycopg2 python-etcd)
PATRONI4_PACKAGES="python3-dateutil python3-click python3-prettytable python3-psutil python3-urllib3 python3-yaml
	python3-cdiff python3-psycopg2 python3-etcd"

# The stunnel4 package installs `stunnel4` on Debian 12 and `stunnel` elsewhere; prints the one on PATH.
stunnel_bin() { command -v stunnel4 || command -v stunnel; }
stunnel_version() { "$(stunnel_bin)" -version 2>&1 | awk '/^stunnel / && !seen++'; }

# The Patroni version in $PATRONI4_DIR, read from its files without running it ("" when there is none).
patroni4_version() {
	sed -n "s/^__version__ = '\(.*\)'\$/\1/p" "$PATRONI4_DIR/usr/lib/python3/dist-packages/patroni/version.py" 2>/dev/null
}
# Whether $PATRONI4_DIR holds Patroni 4 and its wrappers: the check that keeps install_patroni4 from downloading again.
patroni4_present() {
	[[ "$(patroni4_version)" == 4.* ]] && [ -x "$PATRONI4_DIR/bin/patroni" ] && [ -x "$PATRONI4_DIR/bin/patronictl" ]
}
patroni4_describe() {
	echo "$("$PATRONI4_DIR/bin/patroni" --version) (Debian $(cat "$PATRONI4_DIR/DEBIAN-VERSION")) in $PATRONI4_DIR"
}
patroni4_deps_present() { /usr/bin/python3 -c "import $PATRONI4_MODULES"; }
patroni4_deps_describe() {
	/usr/bin/python3 -c 'import importlib.metadata as m, platform, sys
print("python3", platform.python_version() + ":", ", ".join(d + " " + m.version(d) for d in sys.argv[1:]))' "${PATRONI4_DISTS[@]}"
}

# The commands that put Patroni 4 into $PATRONI4_DIR, as root: download Debian 13's patroni package with apt from a
# sources list, package lists and cache of their own (the system's sources, lists and cache stay untouched, and
# nothing is installed from trixie), extract it, add wrappers that run it with Debian 12's python3, and remove
# the download. Printed for a user who is not root; install_patroni4 runs exactly this text.
patroni4_commands() {
	local apt="apt-get -q -o Dir::Etc::sourcelist=$PATRONI4_WORK/$PATRONI4_SUITE.list -o Dir::Etc::sourceparts=-"
	apt+=" -o Dir::State::Lists=$PATRONI4_WORK/lists -o Dir::Cache=$PATRONI4_WORK/cache"
	local lib=$PATRONI4_DIR/usr/lib/python3/dist-packages
	cat <<-EOF
		rm -rf $PATRONI4_WORK $PATRONI4_DIR.new
		mkdir -p $PATRONI4_WORK/lists/partial $PATRONI4_WORK/cache/archives/partial $PATRONI4_DIR.new/bin
		echo 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $PATRONI4_SUITE main' >$PATRONI4_WORK/$PATRONI4_SUITE.list
		chown -R _apt $PATRONI4_WORK
		$apt update
		cd $PATRONI4_WORK && $apt download patroni
		dpkg-deb -x $PATRONI4_WORK/patroni_*_all.deb $PATRONI4_DIR.new
		dpkg-deb -f $PATRONI4_WORK/patroni_*_all.deb Version >$PATRONI4_DIR.new/DEBIAN-VERSION
		for p in patroni patronictl; do printf '#!/bin/sh\nPYTHONPATH=$lib exec /usr/bin/python3 $PATRONI4_DIR/usr/bin/%s "\$@"\n' \$p >$PATRONI4_DIR.new/bin/\$p; chmod 755 $PATRONI4_DIR.new/bin/\$p; done
		chmod -R a+rX $PATRONI4_DIR.new
		rm -rf $PATRONI4_DIR && mv $PATRONI4_DIR.new $PATRONI4_DIR
		rm -rf $PATRONI4_WORK
	EOF
}
install_patroni4() {
	echo "installing Patroni 4 from Debian $PATRONI4_SUITE into $PATRONI4_DIR"
	bash -euo pipefail -c "$(patroni4_commands)"
}

# PostgreSQL 18, the default major (capacity.DefaultPostgresMajor): Debian 12 has no package of it, and Debian's
# newer binary packages need a newer glibc. Built from Debian's source package (sid's postgresql-18, Debian's
# patches applied) into the layout of the PostgreSQL project's packages, /usr/lib/postgresql/18/{bin,lib} and
# /usr/share/postgresql/18, so the paths the product renders for real nodes hold here too; libpq and the other
# libraries stay under /usr/lib/postgresql/18/lib (rpath), so nothing of PostgreSQL 15 changes. The server,
# client tools and contrib; io_uring through liburing. About 10 minutes on 2 idle cores, once per machine: the
# check below finds the installed tree and builds nothing on a second run.
PG18_DIR=/usr/lib/postgresql/18
PG18_SHARE=/usr/share/postgresql/18
PG18_WORK=/opt/pgnvme-tools/postgresql-18.build
PG18_SUITES="sid forky"
PG18_BUILD_PACKAGES="dpkg-dev bison flex pkg-config libreadline-dev zlib1g-dev libssl-dev libicu-dev liburing-dev liblz4-dev
	libzstd-dev"
# What the tests run of 18: the server, the client tools, pg_upgrade, and contrib's pg_stat_statements.
PG18_PROGRAMS="postgres initdb pg_ctl pg_isready psql pg_basebackup pgbench pg_upgrade pg_rewind pg_dump vacuumdb pg_controldata"
postgresql18_present() {
	local p
	for p in $PG18_PROGRAMS; do [ -x "$PG18_DIR/bin/$p" ] || return 1; done
	[ -f "$PG18_SHARE/extension/pg_stat_statements.control" ]
}
postgresql18_describe() { echo "$("$PG18_DIR/bin/postgres" --version), io_method io_uring: $(postgresql18_uring)"; }
postgresql18_uring() {
	if "$PG18_DIR/bin/pg_config" --configure | grep -q -- --with-liburing; then echo built; else echo 'not built'; fi
}
# The commands that build and install PostgreSQL 18 as root, printed for a user who is not root. apt reads sid's
# source lists from files of its own (the system's sources stay untouched); the tree is installed into a staging
# directory first and moved into place whole, so an interrupted build leaves nothing the check above accepts.
postgresql18_commands() {
	local apt="apt-get -q -o Dir::Etc::sourcelist=$PG18_WORK/sources.list -o Dir::Etc::sourceparts=-"
	apt+=" -o Dir::State::Lists=$PG18_WORK/lists -o Dir::Cache=$PG18_WORK/cache"
	local s pkgs
	pkgs=$(tr -s ' \t\n' ' ' <<<"$PG18_BUILD_PACKAGES")
	cat <<-EOF
		apt-get update -qq && apt-get install -y -qq $pkgs
		rm -rf $PG18_WORK $PG18_DIR.new $PG18_SHARE.new
		mkdir -p $PG18_WORK/lists/partial $PG18_WORK/cache/archives/partial $PG18_WORK/src
		: >$PG18_WORK/sources.list
	EOF
	for s in $PG18_SUITES; do
		echo "echo 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $s main' >>$PG18_WORK/sources.list"
	done
	cat <<-EOF
		chown -R _apt $PG18_WORK
		$apt update
		cd $PG18_WORK/src && $apt source postgresql-18
		cd $PG18_WORK/src/postgresql-18-*/ && mkdir build && cd build && ../configure --prefix=$PG18_DIR --datadir=$PG18_SHARE --mandir=$PG18_SHARE/man --with-openssl --with-icu --with-liburing --with-lz4 --with-zstd --with-system-tzdata=/usr/share/zoneinfo --with-extra-version=" (pgnvme build of Debian \$(dpkg-parsechangelog -l ../debian/changelog -S Version))" >../configure.log
		cd $PG18_WORK/src/postgresql-18-*/build && make -s -j"\$(nproc)" world-bin >../make.log 2>&1 || { tail -40 ../make.log; exit 1; }
		cd $PG18_WORK/src/postgresql-18-*/build && make -s install-world-bin DESTDIR=$PG18_WORK/root >../install.log 2>&1 || { tail -40 ../install.log; exit 1; }
		rm -rf $PG18_DIR $PG18_SHARE && mkdir -p $(dirname $PG18_DIR) $(dirname $PG18_SHARE)
		mv $PG18_WORK/root$PG18_SHARE $PG18_SHARE && mv $PG18_WORK/root$PG18_DIR $PG18_DIR
		rm -rf $PG18_WORK
	EOF
}
install_postgresql18() {
	echo "building PostgreSQL 18 from Debian's source package into $PG18_DIR (about 10 minutes on 2 cores)"
	local start=$SECONDS
	bash -euo pipefail -c "$(postgresql18_commands)"
	echo "built and installed PostgreSQL 18 in $((SECONDS - start)) s"
}

# pgBackRest new enough for PostgreSQL 18 (2.55 or later; Debian 12's 2.45 refuses an 18 data directory). Debian
# 12's package stays installed for its directories, user setup and libraries; its binary is diverted
# (dpkg-divert, to /usr/bin/pgbackrest.debian12) and /usr/bin/pgbackrest, the path the EC2 nodes render, becomes
# Debian 13's build, which needs only glibc 2.34 and Debian 12's libraries. Debian's source package of it cannot
# be fetched here (the mirror answers 404 for pgbackrest's sources), so the binary package is used as Patroni 4's is.
PGBACKREST_MIN=2.55
PGBACKREST_SUITE=trixie
PGBACKREST_WORK=/opt/pgnvme-tools/pgbackrest.download
pgbackrest_version() { pgbackrest version 2>/dev/null | awk '{print $2; exit}'; }
pgbackrest_new_enough() {
	local v
	v=$(pgbackrest_version)
	[ -n "$v" ] && [ "$(printf '%s\n%s\n' "$PGBACKREST_MIN" "$v" | sort -V | head -n 1)" = "$PGBACKREST_MIN" ]
}
pgbackrest_describe() { echo "$(pgbackrest version) at $(command -v pgbackrest)"; }
pgbackrest_commands() {
	local apt="apt-get -q -o Dir::Etc::sourcelist=$PGBACKREST_WORK/$PGBACKREST_SUITE.list -o Dir::Etc::sourceparts=-"
	apt+=" -o Dir::State::Lists=$PGBACKREST_WORK/lists -o Dir::Cache=$PGBACKREST_WORK/cache"
	cat <<-EOF
		rm -rf $PGBACKREST_WORK
		mkdir -p $PGBACKREST_WORK/lists/partial $PGBACKREST_WORK/cache/archives/partial $PGBACKREST_WORK/x
		echo 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $PGBACKREST_SUITE main' >$PGBACKREST_WORK/$PGBACKREST_SUITE.list
		chown -R _apt $PGBACKREST_WORK
		$apt update
		cd $PGBACKREST_WORK && $apt download pgbackrest
		dpkg-deb -x $PGBACKREST_WORK/pgbackrest_*.deb $PGBACKREST_WORK/x
		$PGBACKREST_WORK/x/usr/bin/pgbackrest version
		dpkg-divert --local --rename --divert /usr/bin/pgbackrest.debian12 --add /usr/bin/pgbackrest
		install -m 755 $PGBACKREST_WORK/x/usr/bin/pgbackrest /usr/bin/pgbackrest
		rm -rf $PGBACKREST_WORK
	EOF
}
install_pgbackrest() {
	echo "installing pgBackRest from Debian $PGBACKREST_SUITE's package as /usr/bin/pgbackrest"
	bash -euo pipefail -c "$(pgbackrest_commands)"
}

names=() checks=() versions=() packages=() otherwise=() installers=()

# need NAME CHECK VERSION PACKAGES [OTHERWISE [INSTALL]]
#   CHECK     shell code that succeeds when NAME is there (run with eval, output discarded)
#   VERSION   shell code that prints NAME's version on its first line
#   PACKAGES  the Debian packages that provide NAME ("" when apt cannot install it here)
#   OTHERWISE the exact command (or step) that provides NAME when PACKAGES is ""
#   INSTALL   a function of this script that provides NAME as root, after the apt step; it must check
#             nothing itself: it runs only when CHECK fails. Not root: OTHERWISE is shown instead.
need() {
	names+=("$1") checks+=("$2") versions+=("$3") packages+=("$4") otherwise+=("${5:-}") installers+=("${6:-}")
}

need make 'command -v make' 'make --version' make
need postgresql-15 "[ -x $PG_BIN/postgres ] && [ -x $PG_BIN/pgbench ] && [ -x $PG_BIN/initdb ]" \
	"$PG_BIN/postgres --version" postgresql-15
need postgresql-client-15 "[ -x $PG_BIN/psql ] && [ -x $PG_BIN/pg_basebackup ]" "$PG_BIN/psql --version" postgresql-client-15
# The default major, built from source (see install_postgresql18); 15 stays for the tests that need a second major.
need postgresql-18 postgresql18_present postgresql18_describe '' \
	"sudo bash scripts/test-deps.sh (as root it runs install_postgresql18), or these commands:
sudo bash -euo pipefail <<'EOF'
$(postgresql18_commands)
EOF" install_postgresql18
# PostgreSQL refuses to run as root: tests run as root start its processes as this user (postgresql-common makes it).
need postgres-user 'id postgres' 'id postgres' postgresql-common
# The archive proof: pgBackRest writes to the bucket the provider made, through stunnel's TLS in front of moto.
need pgbackrest 'command -v pgbackrest' 'pgbackrest version' pgbackrest
need pgbackrest-$PGBACKREST_MIN+ pgbackrest_new_enough pgbackrest_describe '' \
	"sudo bash scripts/test-deps.sh (as root it runs install_pgbackrest), or these commands:
sudo bash -euo pipefail <<'EOF'
$(pgbackrest_commands)
EOF" install_pgbackrest
need stunnel stunnel_bin stunnel_version stunnel4
# The tests drive the real CLI: 1.11 or later (write-only attributes).
need terraform 'command -v terraform' 'terraform version 2>/dev/null' '' \
	'install Terraform 1.11 or later and put terraform on PATH'
need moto "python3 -c 'import moto.server'" "python3 -c 'import moto; print(\"moto\", moto.__version__)'" '' \
	"python3 -m pip install 'moto[server]'"
# Failover: one etcd 3.4 (and etcdctl) on loopback and Patroni 4 nodes (internal/acctest/patroni).
need etcd 'command -v etcd && command -v etcdctl' 'etcd --version' 'etcd-server etcd-client'
need patroni4-python-deps patroni4_deps_present patroni4_deps_describe "$PATRONI4_PACKAGES"
need patroni4 patroni4_present patroni4_describe '' \
	"sudo bash scripts/test-deps.sh (as root it runs install_patroni4), or these commands:
sudo bash -euo pipefail <<'EOF'
$(patroni4_commands)
EOF" install_patroni4
# The EC2 bootstrap: rendered user-data checked by `cloud-init schema`, its shell by shellcheck; the node simulator
# runs it in a network namespace (ip netns) on a loop device (losetup) with XFS, in its own session (setsid).
need cloud-init 'cloud-init schema --help' 'cloud-init --version 2>&1' cloud-init
need shellcheck 'command -v shellcheck' "shellcheck --version | awk '/^version:/'" shellcheck
need xfsprogs 'command -v mkfs.xfs && command -v xfs_info' 'mkfs.xfs -V' xfsprogs
# The EC2 units are checked with systemd-analyze verify and their mount unit names with systemd-escape.
need systemd-tools 'command -v systemd-analyze && command -v systemd-escape' 'systemd-analyze --version' systemd
need iproute2 'ip netns list' 'ip -V' iproute2
need losetup 'command -v losetup' 'losetup --version' mount
need setsid 'command -v setsid' 'setsid --version' util-linux
# The node simulator (internal/nodesim) enters namespaces and drops privileges with util-linux's tools, reaches
# the nodes with curl, and gives the nodes this machine's AWS CLI (their secrets script reads SSM with it).
need nsenter 'command -v nsenter && command -v unshare && command -v setpriv && command -v mountpoint && command -v blkid' 'nsenter --version' 'util-linux mount'
need curl 'command -v curl' 'curl --version' curl
need aws-cli 'command -v aws' 'aws --version 2>&1' awscli
# The release test (internal/release) signs SHA256SUMS with gpg through .goreleaser.yml's signs section, as the
# release workflow does.
need gnupg 'command -v gpg && command -v gpgconf' 'gpg --version' gnupg

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

# What apt does not provide, the needs' own install functions do (as root, after apt: they may use its packages).
if [ "$(id -u)" -eq 0 ]; then
	for i in "${!names[@]}"; do
		if [ -n "${installers[$i]}" ] && ! has "$i"; then
			"${installers[$i]}"
		fi
	done
fi

# The tests only read cloud-init's schema; on a machine that boots with systemd, an installed cloud-init would
# also run at the next boot and reconfigure the machine. Keep it off there (cloud-init's own switch).
if [ "$(id -u)" -eq 0 ] && command -v cloud-init >/dev/null && [ -d /etc/cloud ] && [ ! -e /etc/cloud/cloud-init.disabled ]; then
	echo "disabling cloud-init at boot (/etc/cloud/cloud-init.disabled): the tests only use cloud-init schema"
	touch /etc/cloud/cloud-init.disabled
fi

# The Debian package starts a cluster of its own (and starts it again on boot); the tests start their own
# servers on free ports, so it only takes memory.
if [ "$(id -u)" -eq 0 ] && command -v pg_lsclusters >/dev/null &&
	pg_lsclusters -h | awk '$1 == 15 && $2 == "main" && $4 == "online" { on = 1 } END { exit !on }'; then
	echo "stopping the Debian package's own PostgreSQL cluster 15 main"
	pg_ctlcluster 15 main stop
fi

# Likewise the etcd-server package starts an etcd of its own where an init script may run (/run/etcd.pid): there
# is no systemd here, and the tests start their own etcd on free ports.
if [ "$(id -u)" -eq 0 ] && [ -x /etc/init.d/etcd ] && [ -r /run/etcd.pid ] &&
	[ "$(cat "/proc/$(cat /run/etcd.pid)/comm" 2>/dev/null)" = etcd ]; then
	echo "stopping the etcd-server package's own etcd service"
	/etc/init.d/etcd stop
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
