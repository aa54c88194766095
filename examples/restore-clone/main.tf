# A point-in-time clone on this machine: a new local cluster restored from another cluster's pgBackRest
# archive to the moment before a mistake, archiving into a stanza of its own. The plan names the base backup
# it starts from and refuses a target the archive cannot reach; `restored` says what the apply did.
terraform {
  required_version = ">= 1.8"
  required_providers {
    pgnvme = {
      source = "pgnvme/pgnvme"
    }
  }
}

variable "repository" {
  description = "The pgBackRest repository directory (repo1-path) that holds the source cluster's archive."
  type        = string
}

variable "source_cluster" {
  description = "The source cluster's name: its pgBackRest stanza."
  type        = string
}

variable "target_time" {
  description = "RFC 3339 time to restore to: every transaction committed at or before it is kept, none after."
  type        = string
}

variable "data_dir" {
  description = "Absolute directory for the clone's nodes."
  type        = string
  validation {
    condition     = startswith(var.data_dir, "/")
    error_message = "data_dir must be an absolute path."
  }
}

resource "pgnvme_cluster" "clone" {
  name = "${var.source_cluster}-clone"

  restore {
    archive {
      pgbackrest_options = {
        "repo1-type" = "posix"
        "repo1-path" = var.repository
      }
      stanza = var.source_cluster
    }
    target {
      time = var.target_time
    }
  }

  # Its own stanza in the same repository: never the source's.
  archive {
    pgbackrest_options = {
      "repo1-type" = "posix"
      "repo1-path" = var.repository
    }
  }

  local {
    data_dir = var.data_dir
  }
}

output "restored" {
  description = "The backup restored, the position and commit time reached, and how long it took."
  value       = pgnvme_cluster.clone.restored
}

output "connection_uri" {
  value     = pgnvme_cluster.clone.connection_uri
  sensitive = true
}
