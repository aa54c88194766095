#!/bin/bash
# pgnvme: reads the passwords of node {{.Node}} in cluster {{.Cluster}} from SSM Parameter Store at boot
# (pgnvme-secrets.service), with the instance role, into the environment file Patroni reads
# ({{.SecretsFile}}, on tmpfs, root only). The user-data names the parameters, never their values:
# anyone allowed ec2:DescribeInstanceAttribute can read user-data.
{{- if .TLS}}
#
# With TLS it also writes the node's TLS files from its bundle {{.SSMTLS}} (a SecureString the provider
# writes: the node's key, its member certificate, its replication client certificate and the cluster's CA
# certificate, PEM, in that order), at boot before etcd and Patroni start; pgnvme-tls.timer runs it every 20
# seconds with --tls-refresh, so a certificate the provider renews reaches the running node. Files change
# only when the bundle did; then a running Patroni is reloaded (SIGHUP: it reloads PostgreSQL, which reads
# the new certificate, and its REST API's certificate); etcd reads its files at each new connection.
{{- end}}
#
# Usage: secrets.sh [OUTPUT]   (OUTPUT defaults to {{.SecretsFile}}){{if .TLS}}, or secrets.sh --tls-refresh{{end}}
set -euo pipefail
umask 077

REGION={{sh .Region}}
{{- if .SSMEndpoint}}
SSM_ENDPOINT=(--endpoint-url {{sh .SSMEndpoint}})
{{- end}}
OUT=${1:-{{sh .SecretsFile}}}
SUPERUSER={{sh .Superuser}}
REPLICATION_USER={{sh .ReplicationUser}}
RESTAPI_USER={{sh .RESTAPIUser}}
SUPERUSER_PARAMETER={{sh .SSMSuperuser}}
REPLICATION_PARAMETER={{sh .SSMReplication}}
RESTAPI_PARAMETER={{sh .SSMRESTAPI}}

log() { printf 'pgnvme-secrets: %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 1
}

# get NAME prints the value of the SecureString parameter NAME. The instance role's credentials and
# the network may take a moment after boot, so it tries for about two minutes.
get() {
  local out="" err attempt type value
  err=$(mktemp)
  for attempt in 1 2 3 4 5 6 7 8; do
    if out=$(aws ssm get-parameter --region "$REGION"{{if .SSMEndpoint}} "${SSM_ENDPOINT[@]}"{{end}} --name "$1" --with-decryption \
      --query 'Parameter.[Type,Value]' --output text 2>"$err"); then
      break
    fi
    out=""
    log "reading $1 failed (attempt $attempt): $(head -c 500 "$err")"
    sleep $((attempt * 3))
  done
  rm -f "$err"
  [ -n "$out" ] || die "cannot read $1 from SSM in $REGION: give the instance role ssm:GetParameter on it (and kms:Decrypt on its key), and store it as a SecureString"
  type=${out%%$'\t'*}
  value=${out#*$'\t'}
  [ "$type" = SecureString ] || die "$1 is a $type parameter; store the password as a SecureString"
  if [ "$value" = "$out" ] || [ -z "$value" ]; then
    die "$1 is empty; store the password in it"
  fi
  case $value in *$'\n'* | *$'\r'*) die "$1 holds a line break; use a password on one line" ;; esac
  printf '%s' "$value"
}

# quote writes $1 in double quotes for a systemd environment file: backslash, double quote, dollar
# sign and backquote escaped with a backslash, every other character as it is.
quote() {
  local v=$1
  v=${v//\\/\\\\}
  v=${v//\"/\\\"}
  v=${v//\$/\\\$}
  v=${v//\`/\\\`}
  printf '"%s"' "$v"
}

{{- if .TLS}}

TLS_PARAMETER={{sh .SSMTLS}}
TLS_DIR={{sh .TLSFiles.Dir}}

# tls REFRESH writes the TLS files from the bundle when they differ from it, and with REFRESH=1 reloads a
# running Patroni. Every file is root's, readable by the group {{.TLSFiles.Group}} (postgres{{if .EtcdMember}} and etcd{{end}}):
# PostgreSQL and libpq accept a key owned by root with group read.
tls() {
  local new f changed=0
  new=$(mktemp -d)
  # The key, then the member, replication and CA certificates (the CA's chain after it, if any, goes to
  # ca.crt too). (The key's header is spelt in two pieces, so
  # that no PEM header of a key appears in the user-data.)
  aws ssm get-parameter --region "$REGION"{{if .SSMEndpoint}} "${SSM_ENDPOINT[@]}"{{end}} --name "$TLS_PARAMETER" --with-decryption \
    --query Parameter.Value --output text | awk -v d="$new" '
    BEGIN { k = "-----BEGIN PRIVATE" " KEY-----" }
    $0 == k { f = d "/node.key" }
    /^-----BEGIN CERTIFICATE/ { f = d "/" (++c == 1 ? "node.crt" : c == 2 ? "replication.crt" : "ca.crt") }
    f { print >> f }
    /^-----END/ { close(f); f = "" }' || die "cannot read $TLS_PARAMETER from SSM in $REGION"
  for f in node.key node.crt replication.crt ca.crt; do
    [ -s "$new/$f" ] || die "$TLS_PARAMETER is not a TLS bundle (a key and three certificates)"
    cmp -s "$new/$f" "$TLS_DIR/$f" || changed=1
  done
  if [ "$changed" = 1 ]; then
    install -d -m 0755 "$TLS_DIR"
    # One rename per file; a renewal keeps the key, so only certificates change.
    for f in ca.crt replication.crt node.key node.crt; do
      install -o root -g {{.TLSFiles.Group}} -m 0640 "$new/$f" "$TLS_DIR/.$f"
      mv -f "$TLS_DIR/.$f" "$TLS_DIR/$f"
    done
    log "wrote the TLS files in $TLS_DIR from $TLS_PARAMETER"
    if [ "$1" = 1 ] && systemctl is-active --quiet pgnvme-patroni.service; then
      systemctl reload pgnvme-patroni.service
      log "reloaded Patroni and PostgreSQL"
    fi
  fi
  rm -rf "$new"
}
if [ "${1:-}" = --tls-refresh ]; then
  tls 1
  exit 0
fi
{{- end}}

superuser_password=$(get "$SUPERUSER_PARAMETER")
replication_password=$(get "$REPLICATION_PARAMETER")
restapi_password=$(get "$RESTAPI_PARAMETER")

mkdir -p "$(dirname "$OUT")"
tmp=$(mktemp "$OUT.XXXXXX")
{
  printf '# Written by pgnvme-secrets.service from SSM Parameter Store; rewritten on every boot.\n'
  printf 'PATRONI_SUPERUSER_USERNAME=%s\n' "$(quote "$SUPERUSER")"
  printf 'PATRONI_SUPERUSER_PASSWORD=%s\n' "$(quote "$superuser_password")"
  printf 'PATRONI_REPLICATION_USERNAME=%s\n' "$(quote "$REPLICATION_USER")"
  printf 'PATRONI_REPLICATION_PASSWORD=%s\n' "$(quote "$replication_password")"
  printf 'PATRONI_RESTAPI_USERNAME=%s\n' "$(quote "$RESTAPI_USER")"
  printf 'PATRONI_RESTAPI_PASSWORD=%s\n' "$(quote "$restapi_password")"
} >"$tmp"
mv -f "$tmp" "$OUT"
log "wrote $OUT from $SUPERUSER_PARAMETER, $REPLICATION_PARAMETER and $RESTAPI_PARAMETER"
{{- if .TLS}}
tls 0
{{- end}}
