# A local cluster set up to be operated: three nodes under ANY 1 quorum commit, archiving with pgBackRest,
# nightly base backups with a 14-day recovery window, TLS from the cluster's own authority, and `check`
# blocks that turn the archive's health and the certificates' ends into warnings in every plan.
#
# The data-loss override is a variable, null unless given on the command line. After the primary and a
# standby are lost together, apply once with the position the plan's refusal names:
#   terraform apply -var accept_data_loss_at_lsn=0/3000148
# The next plain apply sets it back to null, so it never accepts a later loss.
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source = "pgnvme/pgnvme"
    }
  }
}

variable "data_dir" {
  description = "Absolute directory for the nodes' data directories."
  type        = string
  default     = "/var/lib/pgnvme/ops"
  validation {
    condition     = startswith(var.data_dir, "/")
    error_message = "data_dir must be an absolute path."
  }
}

variable "repository" {
  description = "Absolute directory of the pgBackRest repository (repo1-path) the cluster archives to."
  type        = string
  default     = "/var/lib/pgnvme/ops-repo"
  validation {
    condition     = startswith(var.repository, "/")
    error_message = "repository must be an absolute path."
  }
}

variable "postgres_major" {
  description = "PostgreSQL major version of the nodes; it must be installed on this machine (the local platform runs /usr/lib/postgresql/<major>/bin). Changing it replaces the cluster: see the major upgrades guide."
  type        = number
  default     = 18
  validation {
    condition     = var.postgres_major >= 13 && var.postgres_major <= 18 && floor(var.postgres_major) == var.postgres_major
    error_message = "postgres_major must be a whole number from 13 to 18, e.g. 18."
  }
}

variable "accept_data_loss_at_lsn" {
  description = "The WAL position a \"no survivor is proven to hold every acknowledged commit\" refusal names, such as 0/3000148; null otherwise."
  type        = string
  default     = null
  validation {
    condition     = var.accept_data_loss_at_lsn == null || can(regex("^[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}$", var.accept_data_loss_at_lsn))
    error_message = "accept_data_loss_at_lsn must be a WAL position such as 0/3000148, exactly as the refusal names it."
  }
}

data "pgnvme_tuning" "node" {
  vcpus          = 2
  memory_gib     = 4
  disk_gib       = 50
  storage        = "ssd"
  postgres_major = var.postgres_major
}

resource "pgnvme_cluster" "db" {
  name           = "ops"
  postgres_major = var.postgres_major
  node_count     = 3

  synchronous {
    method          = "any"
    number          = 1
    data_durability = "required"
  }

  # work_mem and log_min_duration_statement are applied by a reload; shared_buffers or max_connections
  # would restart the nodes one at a time, standbys first, the primary last.
  parameters = merge(data.pgnvme_tuning.node.postgres_parameters, {
    log_min_duration_statement = "250ms"
  })

  accept_data_loss_at_lsn = var.accept_data_loss_at_lsn

  archive {
    pgbackrest_options = {
      "repo1-type" = "posix"
      "repo1-path" = var.repository
    }
  }

  # A base backup at 03:00 UTC on the primary, a full one every 7th; keep what a restore to any moment of the
  # last 14 days needs, and at least 2 full backups.
  backup {
    schedule   = "*-*-* 03:00:00"
    full_every = 7
    retention {
      recovery_window_days = 14
      min_full_backups     = 2
    }
  }

  # Certificates valid 90 days, renewed by any apply within 7 days of their end (a reload, no restart).
  tls {
    validity_period_hours = 2160
    early_renewal_hours   = 168
  }

  local {
    data_dir = var.data_dir
  }
}

output "uri" {
  description = "The primary's URI (sslmode=verify-full against the cluster's authority): psql \"$(terraform output -raw uri)\"."
  value       = pgnvme_cluster.db.connection_uri
}

output "nodes" {
  description = "Every node as the last refresh saw it: name, role and state."
  value       = [for n in pgnvme_cluster.db.nodes : "${n.name} ${n.role} ${n.state}"]
}

output "archive_status" {
  value = pgnvme_cluster.db.archive_status
}

# Read on refresh; a failed assertion is a warning in the plan, never a failed apply.
check "archive" {
  assert {
    condition     = try(pgnvme_cluster.db.archive_status.archiving_ok, null) != false
    error_message = "WAL is not reaching the archive: commits since the newest archived segment are only on the nodes. See the Archive Behind warning."
  }

  assert {
    condition     = try(pgnvme_cluster.db.archive_status.first_missing_wal, null) == null && try(pgnvme_cluster.db.archive_status.verification_ok, null) != false
    error_message = "The archive is not continuous: a restore cannot replay past the gap. See the Archive Hole or Archive Not Verified warning."
  }

  assert {
    condition     = try(pgnvme_cluster.db.archive_status.backup_count > 0 && timecmp(timeadd(pgnvme_cluster.db.archive_status.last_backup_at, "25h"), plantimestamp()) >= 0, pgnvme_cluster.db.archive_status == null)
    error_message = "The archive holds no base backup from the last 25 hours, although the schedule takes one daily: check local.backup_scheduler_running."
  }
}

check "certificates" {
  assert {
    condition     = try(alltrue([for name, ends in pgnvme_cluster.db.tls.not_after : timecmp(ends, timeadd(plantimestamp(), "24h")) > 0]), true)
    error_message = "A certificate of the cluster ends within a day: run terraform apply, which renews every certificate within early_renewal_hours of its end."
  }
}
