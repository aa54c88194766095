output "connection_uri" {
  description = "libpq multi-host URI over every node with `target_session_attrs=read-write`, without a password: libpq and pgx find the primary, also after a failover."
  value       = pgnvme_cluster.this.connection_uri
}

output "read_only_connection_uri" {
  description = "The same nodes with `target_session_attrs=prefer-standby`."
  value       = pgnvme_cluster.this.read_only_connection_uri
}

output "password_parameter" {
  description = "SSM SecureString holding the `postgres` user's password."
  value       = "${pgnvme_cluster.this.aws.ssm_parameter_path}/superuser-password"
}

output "nodes" {
  description = "Every node as last seen: `name`, `zone`, `role`, `state`, `host` (its private IP) and `port`."
  value       = pgnvme_cluster.this.nodes
}

output "zones" {
  description = "The nodes' availability zones, by node name."
  value       = { for n in data.pgnvme_placement.this.nodes : n.name => n.zone }
}

output "synchronous_standby_names" {
  description = "The `synchronous_standby_names` Patroni keeps on the primary, e.g. `ANY 1 (\"node-2\",\"node-3\")`."
  value       = pgnvme_cluster.this.synchronous_standby_names
}

output "instance_type" {
  description = "The nodes' instance type: the capacity plan's recommendation unless `instance_type` overrides it."
  value       = local.instance_type
}

output "nvme_utilization" {
  description = "Share of the instance type's NVMe the dataset, its growth over the horizon and the WAL use (0 to 1); null when an overriding type is not among the plan's candidates."
  value       = local.candidate == null ? null : local.candidate.disk_utilization
}

output "walg_env" {
  description = "WAL-G's environment for the archive (`WALG_S3_PREFIX`, `AWS_REGION`, ...), for restores and tooling; null when archiving with pgBackRest."
  value       = var.pgbackrest_options == null ? pgnvme_archive_bucket.this[0].walg_env : null
}

output "instance_ids" {
  description = "Each node's current instance, by node name."
  value       = pgnvme_cluster.this.aws.instance_ids
}

output "archive_status" {
  description = "The archive as the last refresh read it: the newest archived segment and its time, segments waiting, `archiving_ok`, the base backups and the window a restore can reach (see pgnvme_cluster's `archive_status`)."
  value       = pgnvme_cluster.this.archive_status
}

output "load_balancer_dns_name" {
  description = "DNS name of the Network Load Balancer in front of the primary (aws_settings.load_balancer), null without one."
  value       = pgnvme_cluster.this.aws.load_balancer_dns_name
}

output "ca_certificate" {
  description = "The cluster's certificate authority (PEM) with var.tls, for clients' sslrootcert (for example ~/.postgresql/root.crt); null without TLS."
  value       = try(pgnvme_cluster.this.tls.ca_certificate, null)
}
