# Three PostgreSQL nodes on this machine under ANY 1 quorum commit, tuned, archiving with pgBackRest.
data "pgnvme_tuning" "node" {
  vcpus          = 2
  memory_gib     = 4
  disk_gib       = 50
  storage        = "ssd"
  postgres_major = 18
}

resource "pgnvme_cluster" "demo" {
  name           = "demo"
  postgres_major = 18
  node {
    name = "pg-a"
    zone = "zone-a"
  }
  node {
    name = "pg-b"
    zone = "zone-b"
  }
  node {
    name = "pg-c"
    zone = "zone-c"
  }
  synchronous {
    method          = "any"
    number          = 1
    data_durability = "required"
  }
  parameters = data.pgnvme_tuning.node.postgres_parameters
  archive {
    pgbackrest_options = {
      "repo1-type" = "posix"
      "repo1-path" = "/var/lib/pgnvme/demo-repo"
    }
  }
  # Base backups on the primary at 03:00 UTC, a full one every 7th; keep 14 days restorable.
  backup {
    schedule   = "*-*-* 03:00:00"
    full_every = 7
    retention {
      recovery_window_days = 14
      min_full_backups     = 2
    }
  }
  local {
    data_dir  = "/var/lib/pgnvme/demo"
    port_base = 54320
  }
}

output "connection_uri" {
  value = pgnvme_cluster.demo.connection_uri
}

# Archive health from the last refresh: warns in every plan when WAL stops reaching the archive, or when
# the archive has a hole or failed its verification after a failover.
check "archive" {
  assert {
    condition     = try(pgnvme_cluster.demo.archive_status.archiving_ok, null) != false
    error_message = "WAL is not reaching the archive: see the Archive Behind warning."
  }

  assert {
    condition     = try(pgnvme_cluster.demo.archive_status.first_missing_wal, null) == null && try(pgnvme_cluster.demo.archive_status.verification_ok, null) != false
    error_message = "The archive is not continuous: see the Archive Hole or Archive Not Verified warning."
  }
}
