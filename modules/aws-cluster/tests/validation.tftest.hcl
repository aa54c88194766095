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

run "aws_settings_api_address" {
  command = plan
  variables {
    aws_settings = { api_address = "public" }
  }
  expect_failures = [var.aws_settings]
}

run "aws_settings_security_groups" {
  command = plan
  variables {
    aws_settings = { security_group_ids = ["default"] }
  }
  expect_failures = [var.aws_settings]
}

run "aws_settings_root_volume" {
  command = plan
  variables {
    aws_settings = { root_volume_gib = 4 }
  }
  expect_failures = [var.aws_settings]
}

run "aws_settings_metadata_hop_limit" {
  command = plan
  variables {
    aws_settings = { metadata_hop_limit = 0 }
  }
  expect_failures = [var.aws_settings]
}

run "aws_settings_ami_parameter" {
  command = plan
  variables {
    aws_settings = { ami_ssm_parameter = "aws/service/debian/release/12/latest/amd64" }
  }
  expect_failures = [var.aws_settings]
}

run "pgbackrest_node_option" {
  command = plan
  variables {
    pgbackrest_options = { "pg1-path" = "/var/lib/postgresql/data" }
  }
  expect_failures = [var.pgbackrest_options]
}

# The settings reach the cluster: with a profile of the caller's own, the bucket's node policy is not
# passed (the resource takes node_policy_json only with the role it creates).
run "aws_settings_reach_the_cluster" {
  command = plan
  variables {
    pgbackrest_options = null
    aws_settings = {
      load_balancer        = true
      api_address          = "public_ip"
      security_group_ids   = ["sg-0123456789abcdef0"]
      iam_instance_profile = "orders-nodes"
      key_name             = "ops"
      root_volume_gib      = 40
      metadata_hop_limit   = 1
    }
  }
  override_resource {
    target = pgnvme_cluster.this
  }
  expect_failures = [check.quorum, check.archive]
  assert {
    condition = (pgnvme_cluster.this.aws.load_balancer && pgnvme_cluster.this.aws.api_address == "public_ip" &&
      pgnvme_cluster.this.aws.security_group_ids == tolist(["sg-0123456789abcdef0"]) && pgnvme_cluster.this.aws.iam_instance_profile == "orders-nodes" &&
      pgnvme_cluster.this.aws.key_name == "ops" && pgnvme_cluster.this.aws.root_volume_gib == 40 && pgnvme_cluster.this.aws.metadata_hop_limit == 1 &&
    pgnvme_cluster.this.aws.node_policy_json == null)
    error_message = "aws_settings should reach the cluster's aws block, and node_policy_json stay null with a profile of the caller's own."
  }
}

run "tls_own_ca_without_its_key" {
  command = plan
  variables {
    tls = { ca_cert_pem = "-----BEGIN CERTIFICATE-----" }
  }
  expect_failures = [var.tls]
}

# The tls object reaches the cluster's tls block; the URIs then carry sslmode=verify-full.
run "tls_reaches_the_cluster" {
  command = plan
  variables {
    tls = { validity_period_hours = 720, early_renewal_hours = 72 }
  }
  override_resource {
    target = pgnvme_cluster.this
  }
  expect_failures = [check.quorum, check.archive]
  assert {
    condition     = pgnvme_cluster.this.tls.validity_period_hours == 720 && pgnvme_cluster.this.tls.early_renewal_hours == 72 && pgnvme_cluster.this.tls.ca_cert_pem == null
    error_message = "var.tls should reach the cluster's tls block."
  }
}
