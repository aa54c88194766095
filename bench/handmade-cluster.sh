#!/usr/bin/env bash
# The baseline for pgnvme_cluster's create time: the same three nodes made by hand with the PostgreSQL
# binaries (initdb, pg_basebackup -R, pg_ctl), streaming under ANY 1. Usage: handmade-cluster.sh DIR PORT_BASE [BIN_DIR]
# (BIN_DIR: the PostgreSQL binaries to use; default the newest /usr/lib/postgresql/*/bin).
set -euo pipefail
dir=$1; base=$2
bin=${3:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
mkdir -p "$dir"; chmod 755 "$dir"; [ "$(id -u)" = 0 ] && chown postgres "$dir"
as_pg "$bin/initdb" -D "$dir/node-1" -U postgres --auth=trust -E UTF8 --locale=C --data-checksums >/dev/null
cat >>"$dir/node-1/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $base
unix_socket_directories = '$dir/node-1'
synchronous_standby_names = 'ANY 1 ("node-2", "node-3")'
CONF
echo "host replication all 127.0.0.1/32 trust" >>"$dir/node-1/pg_hba.conf"
as_pg "$bin/pg_ctl" -D "$dir/node-1" -l "$dir/node-1.log" -w start >/dev/null
for i in 2 3; do
	as_pg "$bin/pg_basebackup" -D "$dir/node-$i" -d "host=127.0.0.1 port=$base user=postgres application_name=node-$i" -X stream -c fast -R -w
	cat >>"$dir/node-$i/postgresql.conf" <<CONF
port = $((base + i - 1))
unix_socket_directories = '$dir/node-$i'
CONF
	as_pg "$bin/pg_ctl" -D "$dir/node-$i" -l "$dir/node-$i.log" -w start >/dev/null
done
until [ "$(as_pg "$bin/psql" -X -A -t -h 127.0.0.1 -p "$base" -U postgres -c "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'")" = 2 ]; do
	sleep 0.05
done
