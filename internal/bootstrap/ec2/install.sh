#!/bin/bash
# pgnvme: installs what node {{.Node}} of cluster {{.Cluster}} runs and starts it. cloud-init runs it
# once per instance (runcmd); running it again installs only what is missing.
#
# PostgreSQL {{.Major}} and Patroni 4 or later come from the PostgreSQL project's repository
# (apt.postgresql.org, set up with the script and key Debian's postgresql-common ships); etcd and
# the AWS CLI from Debian.{{if .WALG}} WAL-G {{.WALGVersion}} is downloaded and checked against its pinned SHA-256.{{end}}
#
# PGNVME_INSTALL=check in the environment cloud-init runs with (never in user-data) installs nothing:
# the script checks that the programs are there, says which are missing, and does the rest as usual.
# It is for images that carry everything already, such as pgnvme's node simulator.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
INSTALL_MODE=${PGNVME_INSTALL:-install}

POSTGRES_MAJOR={{.Major}}
APT_ARCH={{sh .AptArch}}
PACKAGES=({{words .Packages}})
{{- if .WALG}}
WALG_VERSION={{sh .WALGVersion}}
WALG_URL={{sh .WALGURL}}
WALG_SHA256={{sh .WALGSHA256}}
WALG_BIN={{sh .WALGBin}}
{{- end}}
# Configuration files the postgres user reads (cloud-init wrote them as root).
POSTGRES_READS=({{words .PostgresReads}})
{{- if .PostgresDirs}}
# Directories the postgres user writes.
POSTGRES_DIRS=({{words .PostgresDirs}})
{{- end}}
# The packages' own units, which would start the daemons with their default configurations.
PACKAGE_UNITS=(etcd.service patroni.service)
ENABLE_UNITS=({{words .EnableUnits}})

log() { printf 'pgnvme-install: %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 1
}

case $INSTALL_MODE in
  install | check) ;;
  *) die "PGNVME_INSTALL=$INSTALL_MODE: use install (the default) or check" ;;
esac

arch=$(dpkg --print-architecture)
[ "$arch" = "$APT_ARCH" ] || die "node {{.Node}} was rendered for $APT_ARCH, but this machine is $arch: render it with the instance type's architecture"

if [ "$INSTALL_MODE" = check ]; then
  # The programs the units and scripts run, from the packages the install mode would install.
  absent=()
  for cmd in {{words .CheckCommands}}; do
    if [ "${cmd#/}" = "$cmd" ]; then
      command -v "$cmd" >/dev/null 2>&1 || absent+=("$cmd")
    else
      [ -x "$cmd" ] || absent+=("$cmd")
    fi
  done
  [ "${#absent[@]}" -eq 0 ] || die "PGNVME_INSTALL=check, and this image lacks ${absent[*]}: install them in the image, or unset PGNVME_INSTALL"
  log "PGNVME_INSTALL=check: installing nothing; found {{words .CheckCommands}}"
else
  # Keep package scripts from starting daemons while they install.
  policy_created=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 0755 /usr/sbin/policy-rc.d
    policy_created=1
  fi
  cleanup() {
    if [ -n "$policy_created" ]; then
      rm -f /usr/sbin/policy-rc.d
    fi
  }
  trap cleanup EXIT

  # missing prints those of its arguments that are not installed packages.
  missing() {
    local p
    for p in "$@"; do
      # shellcheck disable=SC2016 # ${Status} is dpkg-query's, not the shell's
      if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)" != "install ok installed" ]; then
        printf '%s\n' "$p"
      fi
    done
  }

  # apt_install installs those of its arguments that are missing, keeping configuration files that exist.
  apt_install() {
    local todo
    mapfile -t todo < <(missing "$@")
    if [ "${#todo[@]}" -eq 0 ]; then
      log "installed already: $*"
      return
    fi
    log "installing ${todo[*]}"
    apt-get -o Acquire::Retries=5 update
    apt-get -o Acquire::Retries=5 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
      install -y --no-install-recommends "${todo[@]}"
  }

  # The PostgreSQL project's repository, with the key postgresql-common ships.
  apt_install postgresql-common ca-certificates curl
  if [ ! -e /etc/apt/sources.list.d/pgdg.sources ] && [ ! -e /etc/apt/sources.list.d/pgdg.list ]; then
    /usr/share/postgresql-common/pgdg/apt.postgresql.org.sh -y
  fi

  # No "main" cluster when postgresql-$POSTGRES_MAJOR installs: Patroni makes the node's only cluster,
  # on the instance store.
  conf=/etc/postgresql-common/createcluster.conf
  sed -i -E 's/^[#[:space:]]*create_main_cluster[[:space:]]*=.*/create_main_cluster = false/' "$conf"
  grep -qx 'create_main_cluster = false' "$conf" || echo 'create_main_cluster = false' >>"$conf"

  apt_install "${PACKAGES[@]}"
fi

# Patroni before 4 reads synchronous_mode: quorum as off, silently.
patroni_version=$(patroni --version 2>&1 | awk '{ print $NF }')
case $patroni_version in
  [4-9].* | [1-9][0-9]*.*) log "PostgreSQL $POSTGRES_MAJOR, Patroni $patroni_version" ;;
  *) die "Patroni ${patroni_version:-?} is installed, and quorum mode needs 4 or later: check that apt.postgresql.org is in /etc/apt/sources.list.d and apt-cache policy patroni" ;;
esac
{{- if .WALG}}

# WAL-G: the pinned binary, or nothing.
if [ "$INSTALL_MODE" = check ]; then
  log "WAL-G at $WALG_BIN, as the image has it"
elif [ -x "$WALG_BIN" ] && echo "$WALG_SHA256  $WALG_BIN" | sha256sum --check --status -; then
  log "WAL-G $WALG_VERSION installed already"
else
  log "downloading WAL-G $WALG_VERSION from $WALG_URL"
  tmp=$(mktemp)
  curl -fsSL --retry 5 --retry-connrefused -o "$tmp" "$WALG_URL"
  if ! echo "$WALG_SHA256  $tmp" | sha256sum --check --status -; then
    rm -f "$tmp"
    die "the file at $WALG_URL does not have the SHA-256 $WALG_SHA256 pinned for WAL-G $WALG_VERSION: refusing to install it"
  fi
  install -m 0755 -o root -g root "$tmp" "$WALG_BIN"
  rm -f "$tmp"
fi
{{- end}}

chgrp postgres "${POSTGRES_READS[@]}"
chmod 0640 "${POSTGRES_READS[@]}"
{{- if .TLS}}
# The TLS files' readers: PostgreSQL and Patroni{{if .EtcdMember}}, and etcd{{end}} (secrets.sh writes the files).
groupadd -rf {{.TLSFiles.Group}}
usermod -aG {{.TLSFiles.Group}} postgres
{{- if .EtcdMember}}
usermod -aG {{.TLSFiles.Group}} etcd
{{- end}}
{{- end}}
{{- if .PostgresDirs}}
install -d -m 0750 -o postgres -g postgres "${POSTGRES_DIRS[@]}"
{{- end}}

for unit in "${PACKAGE_UNITS[@]}"; do
  systemctl disable --now "$unit" >/dev/null 2>&1 || true
  systemctl mask "$unit" >/dev/null
done
systemctl daemon-reload
systemctl enable "${ENABLE_UNITS[@]}"
# Not waiting: the disks start the database, which waits for them.
systemctl start --no-block "${ENABLE_UNITS[@]}"
log "installed; started ${ENABLE_UNITS[*]}"
