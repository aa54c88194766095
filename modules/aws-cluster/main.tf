# The talk's architecture on EC2 from a dataset size: the capacity plan picks the instance type by NVMe
# capacity, the placement puts one node per zone where that type is offered, an archive bucket built for
# WAL-G takes the WAL, and the cluster runs a primary and two standbys under ANY 1 quorum commit with Patroni.

data "pgnvme_capacity_plan" "this" {
  region               = var.region
  dataset_gib          = var.dataset_gib
  growth_gib_per_month = var.growth_gib_per_month
  horizon_months       = var.horizon_months
  node_count           = var.node_count
  architectures        = [var.architecture]
  postgres_major       = var.postgres_major
  source               = var.catalog_source
}

locals {
  instance_type = coalesce(var.instance_type, data.pgnvme_capacity_plan.this.instance_type)
  # The chosen type's line in the plan (the recommended one unless overridden, then its own if listed).
  candidate = try([for c in data.pgnvme_capacity_plan.this.candidates : c if c.instance_type == local.instance_type][0], null)
}

data "pgnvme_placement" "this" {
  instance_type = local.instance_type
  region        = var.region
  node_count    = var.node_count
  zones         = sort(keys(var.subnet_ids))
  source        = var.catalog_source
}

# A bucket name has at most 63 characters, 26 of them the generated suffix: the prefix takes the name's
# first 32 (the archive's prefix inside the bucket is the whole name).
resource "pgnvme_archive_bucket" "this" {
  count         = var.pgbackrest_options == null ? 1 : 0
  bucket_prefix = "${substr(var.name, 0, 32)}-wal-"
  region        = var.region
  prefix        = "clusters/${var.name}"
  tags          = var.tags
}

resource "pgnvme_cluster" "this" {
  name           = var.name
  postgres_major = var.postgres_major
  parameters     = data.pgnvme_capacity_plan.this.postgres_parameters

  dynamic "node" {
    for_each = data.pgnvme_placement.this.nodes
    content {
      name = node.value.name
      zone = node.value.zone
    }
  }
  dynamic "tls" {
    for_each = var.tls == null ? [] : [var.tls]
    content {
      validity_period_hours = tls.value.validity_period_hours
      early_renewal_hours   = tls.value.early_renewal_hours
      ca_cert_pem           = tls.value.ca_cert_pem
      ca_key_ssm_parameter  = tls.value.ca_key_ssm_parameter
    }
  }
  archive {
    pgbackrest_options = var.pgbackrest_options
    walg_env           = var.pgbackrest_options == null ? pgnvme_archive_bucket.this[0].walg_env : null
  }
  aws {
    region              = var.region
    instance_type       = local.instance_type
    ami_id              = var.ami_id
    subnet_ids          = { for n in data.pgnvme_placement.this.nodes : n.zone => var.subnet_ids[n.zone] }
    allowed_cidrs       = var.allowed_cidrs
    node_policy_json    = var.pgbackrest_options == null && var.aws_settings.iam_instance_profile == null ? pgnvme_archive_bucket.this[0].node_policy_json : null
    tags                = var.tags
    deletion_protection = var.deletion_protection

    load_balancer        = var.aws_settings.load_balancer
    api_address          = var.aws_settings.api_address
    security_group_ids   = var.aws_settings.security_group_ids
    iam_instance_profile = var.aws_settings.iam_instance_profile
    key_name             = var.aws_settings.key_name
    ami_ssm_parameter    = var.ami_id == null ? var.aws_settings.ami_ssm_parameter : null
    placement_group      = var.aws_settings.placement_group
    root_volume_gib      = var.aws_settings.root_volume_gib
    metadata_hop_limit   = var.aws_settings.metadata_hop_limit
  }
}

# Replication health, read from the primary on every plan (a warning, never a failed apply). The password is
# the SSM SecureString in output password_parameter, passed as PGPASSWORD. While no single primary is known
# (a failover under way) the first node is read, and the check warns.
check "quorum" {
  data "pgnvme_replication_status" "primary" {
    server {
      host     = try(pgnvme_cluster.this.primary.host, pgnvme_cluster.this.nodes[0].host)
      port     = try(pgnvme_cluster.this.primary.port, pgnvme_cluster.this.nodes[0].port)
      database = "postgres"
      username = "postgres"
    }
  }

  assert {
    condition     = data.pgnvme_replication_status.primary.is_primary && length([for s in data.pgnvme_replication_status.primary.standbys : s if s.state == "streaming"]) >= 2
    error_message = "No single primary is known, or fewer than two standbys stream from it: a zone loss now could stop writes (ANY 1 needs one of them). The next apply replaces lost nodes."
  }
}

# Archive health, from pgnvme_cluster's last refresh (archive_status): WAL reaches the bucket (nothing waits
# for longer than twice archive_timeout plus 10 s), a base backup exists that is no older than the nodes'
# daily schedule allows (25 hours), and the archive is continuous: no segment missing since the oldest backup,
# and the last verification after a failover passed.
check "archive" {
  assert {
    condition     = try(pgnvme_cluster.this.archive_status.archiving_ok, null) != false
    error_message = "WAL is not reaching the archive bucket: commits since the newest archived segment are only on the nodes. The plan's \"Archive Behind\" warning says how far behind and what to check."
  }

  assert {
    condition     = try(pgnvme_cluster.this.archive_status.backup_count > 0 && timecmp(timeadd(pgnvme_cluster.this.archive_status.last_backup_at, "25h"), plantimestamp()) >= 0, pgnvme_cluster.this.archive_status == null)
    error_message = "The archive holds no base backup from the last 25 hours (the nodes take one daily): a restore would replay all the WAL since the last one, or is impossible without one. Check pgnvme-backup.service on the primary."
  }

  assert {
    condition     = try(pgnvme_cluster.this.archive_status.first_missing_wal, null) == null && try(pgnvme_cluster.this.archive_status.verification_ok, null) != false
    error_message = "The archive is not continuous: a segment is missing after the oldest backup's first one, or the verification after the last failover failed. A restore cannot replay past the gap. The plan's \"Archive Hole\" or \"Archive Not Verified\" warning says which segment and what to do."
  }
}
