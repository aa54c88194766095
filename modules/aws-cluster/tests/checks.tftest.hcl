# The module's `archive` check against the archive_status a refresh could read. The cluster is overridden
# (nothing is launched, and no AWS endpoint is needed: the capacity plan and the placement are computed
# offline), with only its archive_status given. Each unhealthy archive fails the check (a warning in a real
# plan, an expected failure here); a healthy one passes it.

variables {
  name   = "tf-acc-checks"
  region = "eu-west-1"
  subnet_ids = {
    "eu-west-1a" = "subnet-0aaaaaaaaaaaaaaa1"
    "eu-west-1b" = "subnet-0aaaaaaaaaaaaaaa2"
    "eu-west-1c" = "subnet-0aaaaaaaaaaaaaaa3"
  }
  dataset_gib        = 20
  ami_id             = "ami-0123456789abcdef0"
  pgbackrest_options = { "repo1-type" = "s3", "repo1-s3-bucket" = "tf-acc-checks", "repo1-s3-region" = "eu-west-1", "repo1-path" = "/clusters/tf-acc-checks" }
}

# The quorum check's read of the primary, overridden: Terraform 1.11 cannot override a nested list (its
# standbys), so that check fails in every run here, expectedly (its own tests are cluster.tftest.hcl's).
override_data {
  target = data.pgnvme_replication_status.primary
  values = { is_primary = true }
}

run "healthy_archive_passes" {
  override_resource {
    target = pgnvme_cluster.this
    values = {
      primary = { host = "127.0.0.1", port = 5432 }
      archive_status = {
        archiving_ok      = true
        backup_count      = 2
        last_backup_at    = "2999-01-01T00:00:00Z"
        first_missing_wal = null
        verification_ok   = true
      }
    }
  }
  expect_failures = [check.quorum]
}

run "archiving_failing_fails" {
  plan_options {
    replace = [pgnvme_cluster.this] # an overridden resource keeps its values on update: create it anew
  }
  override_resource {
    target = pgnvme_cluster.this
    values = {
      primary = { host = "127.0.0.1", port = 5432 }
      archive_status = {
        archiving_ok   = false
        backup_count   = 2
        last_backup_at = "2999-01-01T00:00:00Z"
      }
    }
  }
  expect_failures = [check.quorum, check.archive]
}

run "old_backup_fails" {
  plan_options {
    replace = [pgnvme_cluster.this] # an overridden resource keeps its values on update: create it anew
  }
  override_resource {
    target = pgnvme_cluster.this
    values = {
      primary = { host = "127.0.0.1", port = 5432 }
      archive_status = {
        archiving_ok   = true
        backup_count   = 2
        last_backup_at = "2020-01-01T00:00:00Z"
      }
    }
  }
  expect_failures = [check.quorum, check.archive]
}

run "missing_segment_fails" {
  plan_options {
    replace = [pgnvme_cluster.this] # an overridden resource keeps its values on update: create it anew
  }
  override_resource {
    target = pgnvme_cluster.this
    values = {
      primary = { host = "127.0.0.1", port = 5432 }
      archive_status = {
        archiving_ok      = true
        backup_count      = 2
        last_backup_at    = "2999-01-01T00:00:00Z"
        first_missing_wal = "000000010000000000000007"
      }
    }
  }
  expect_failures = [check.quorum, check.archive]
}

run "failed_verification_fails" {
  plan_options {
    replace = [pgnvme_cluster.this] # an overridden resource keeps its values on update: create it anew
  }
  override_resource {
    target = pgnvme_cluster.this
    values = {
      primary = { host = "127.0.0.1", port = 5432 }
      archive_status = {
        archiving_ok      = true
        backup_count      = 2
        last_backup_at    = "2999-01-01T00:00:00Z"
        verification_ok   = false
        verified_timeline = 2
      }
    }
  }
  expect_failures = [check.quorum, check.archive]
}
