# Every variable's validation at plan level: nothing is planned against AWS, so these runs need no endpoint.

variables {
  name        = "tf-acc-orders"
  region      = "eu-west-1"
  dataset_gib = 20
  subnet_ids = {
    "eu-west-1a" = "subnet-0aaaaaaaaaaaaaaa1"
    "eu-west-1b" = "subnet-0aaaaaaaaaaaaaaa2"
    "eu-west-1c" = "subnet-0aaaaaaaaaaaaaaa3"
  }
}

run "name_too_long_for_the_role" {
  command = plan
  variables {
    name = "orders-with-a-name-much-too-long-for-an-iam-role-of-its-own"
  }
  expect_failures = [var.name]
}

run "name_uppercase" {
  command = plan
  variables {
    name = "Orders"
  }
  expect_failures = [var.name]
}

run "postgres_major_unknown" {
  command = plan
  variables {
    postgres_major = 12
  }
  expect_failures = [var.postgres_major]
}

run "region_name" {
  command = plan
  variables {
    region = "Ireland"
  }
  expect_failures = [var.region]
}

run "two_zones" {
  command = plan
  variables {
    subnet_ids = { "eu-west-1a" = "subnet-0aaaaaaaaaaaaaaa1", "eu-west-1b" = "subnet-0aaaaaaaaaaaaaaa2" }
  }
  expect_failures = [var.subnet_ids]
}

run "subnet_id" {
  command = plan
  variables {
    subnet_ids = { "eu-west-1a" = "default", "eu-west-1b" = "subnet-0aaaaaaaaaaaaaaa2", "eu-west-1c" = "subnet-0aaaaaaaaaaaaaaa3" }
  }
  expect_failures = [var.subnet_ids]
}

run "dataset_size" {
  command = plan
  variables {
    dataset_gib = 0
  }
  expect_failures = [var.dataset_gib]
}

run "negative_growth" {
  command = plan
  variables {
    growth_gib_per_month = -1
  }
  expect_failures = [var.growth_gib_per_month]
}

run "horizon" {
  command = plan
  variables {
    horizon_months = 121
  }
  expect_failures = [var.horizon_months]
}

run "instance_type_name" {
  command = plan
  variables {
    instance_type = "big"
  }
  expect_failures = [var.instance_type]
}

run "ami_id" {
  command = plan
  variables {
    ami_id = "debian-12"
  }
  expect_failures = [var.ami_id]
}

run "open_to_every_network" {
  command = plan
  variables {
    allowed_cidrs = ["0.0.0.0/0"]
  }
  expect_failures = [var.allowed_cidrs]
}

run "reserved_tag" {
  command = plan
  variables {
    tags = { "pgnvme:cluster" = "other" }
  }
  expect_failures = [var.tags]
}

run "node_count_two" {
  command = plan
  variables {
    node_count = 2
  }
  expect_failures = [var.node_count]
}

run "node_count_fractional" {
  command = plan
  variables {
    node_count = 3.5
  }
  expect_failures = [var.node_count]
}

run "architecture" {
  command = plan
  variables {
    architecture = "aarch64"
  }
  expect_failures = [var.architecture]
}

run "catalog_source" {
  command = plan
  variables {
    catalog_source = "live"
  }
  expect_failures = [var.catalog_source]
}

# The longest name the role allows plans: the archive bucket's prefix takes its first 32 characters (a
# bucket name has at most 63, 26 of them generated). The cluster is overridden, so nothing is asked of
# AWS (the capacity plan and the placement read the embedded catalog); the bucket's own checks run.
run "name_57_characters_plans" {
  command = plan
  variables {
    name               = "orders-with-a-name-of-fifty-seven-characters-exactly-abcd"
    pgbackrest_options = null # the bucket is made for WAL-G only (a caller may pass pgBackRest options to every run)
  }
  override_resource {
    target = pgnvme_cluster.this
  }
  # The checks read the cluster, known only after an apply.
  expect_failures = [check.quorum, check.archive]
  assert {
    condition     = pgnvme_archive_bucket.this[0].bucket_prefix == "orders-with-a-name-of-fifty-seve-wal-" && pgnvme_archive_bucket.this[0].prefix == "clusters/${var.name}"
    error_message = "The bucket prefix should be the name's first 32 characters: ${pgnvme_archive_bucket.this[0].bucket_prefix}"
  }
}
