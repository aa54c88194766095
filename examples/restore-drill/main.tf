# A scheduled restore drill of a cluster's archive, for a CI job (for example nightly): every
# `terraform plan` restores the archive's newest backup into a scratch node on the runner, checks it,
# removes it, and fails when the archive does not pass or the restore is slower than the RTO. Run it where
# PostgreSQL is installed (the same major version as the cluster) with the archive's archiver (pgBackRest,
# or WAL-G's release the nodes run as wal-g on PATH) and room for the database in work_dir, as root (the
# scratch node runs as postgres) or as the user PostgreSQL runs as. Give pgbackrest_options and stanza,
# or walg_env:
#
#   terraform init && terraform plan -input=false -var-file=orders.tfvars
#
# The plan fails on a broken archive (a failed postcondition is an error); its outputs are the RTO and
# what was restored, for the job's log or a metrics push.
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source = "pgnvme/pgnvme"
    }
  }
}

variable "name" {
  description = "The cluster whose archive is drilled, for the messages."
  type        = string
}

variable "pgbackrest_options" {
  description = "A pgBackRest archive's options: pgnvme_archive_bucket's pgbackrest_options plus credentials (repo1-s3-key-type = auto on an EC2 runner with an instance profile that can read the archive). Null for a WAL-G archive."
  type        = map(string)
  default     = null
  sensitive   = true
}

variable "stanza" {
  description = "With pgbackrest_options: the pgBackRest stanza, the cluster's name."
  type        = string
  default     = null
}

variable "walg_env" {
  description = "A WAL-G archive's environment: pgnvme_archive_bucket's walg_env (credentials from the runner's instance profile, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY added). Null for a pgBackRest archive."
  type        = map(string)
  default     = null
  sensitive   = true
}

variable "check_sql" {
  description = "A query the restored database must answer with true, such as SELECT count(*) > 0 FROM orders."
  type        = string
  default     = "SELECT true"
}

variable "rto_seconds" {
  description = "The longest restore that passes."
  type        = number
  default     = 1800
  validation {
    condition     = var.rto_seconds > 0
    error_message = "rto_seconds must be positive."
  }
}

variable "work_dir" {
  description = "Where the scratch node is made and removed; it needs room for the database. Empty: the system's temporary directory."
  type        = string
  default     = ""
}

data "pgnvme_restore_drill" "this" {
  archive {
    pgbackrest_options = var.pgbackrest_options
    stanza             = var.stanza
    walg_env           = var.walg_env
  }
  check_sql = var.check_sql
  work_dir  = var.work_dir == "" ? null : var.work_dir

  lifecycle {
    postcondition {
      condition     = self.verification_ok
      error_message = "The archive of ${var.name} failed its verification: ${self.verification_detail}"
    }
    postcondition {
      condition     = self.check_ok
      error_message = "The database restored from ${var.name}'s archive did not pass check_sql."
    }
    postcondition {
      condition     = self.restore_seconds <= var.rto_seconds
      error_message = "Restoring ${var.name}'s archive took ${self.restore_seconds} s, over the RTO of ${var.rto_seconds} s."
    }
  }
}

output "restore_seconds" {
  description = "How long the restore took on this machine."
  value       = data.pgnvme_restore_drill.this.restore_seconds
}

output "restored" {
  description = "What was restored: the backup, its size, the WAL replayed and where replay stopped."
  value = {
    backup             = data.pgnvme_restore_drill.this.restored_backup
    backup_finished_at = data.pgnvme_restore_drill.this.backup_finished_at
    restored_bytes     = data.pgnvme_restore_drill.this.restored_bytes
    wal_replayed_bytes = data.pgnvme_restore_drill.this.wal_replayed_bytes
    reached_lsn        = data.pgnvme_restore_drill.this.reached_lsn
    reached_time       = data.pgnvme_restore_drill.this.reached_time
    recoverable_to     = data.pgnvme_restore_drill.this.recoverable_to
  }
}
