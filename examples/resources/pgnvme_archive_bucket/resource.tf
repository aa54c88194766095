# The WAL archive of one cluster, SSE-KMS encrypted, with a replica in another region.
resource "pgnvme_archive_bucket" "wal" {
  bucket      = "acme-orders-wal-archive"
  prefix      = "clusters/orders"
  kms_key_arn = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"

  replica {
    region      = "us-west-2"
    bucket      = "acme-orders-wal-archive-replica"
    kms_key_arn = "arn:aws:kms:us-west-2:123456789012:key/abcd1234-12ab-34cd-56ef-1234567890ab"
  }

  tags = {
    cluster = "orders"
  }
}

# What the database nodes need: WAL-G's environment and a least-privilege policy for their role.
output "walg_env" {
  value = pgnvme_archive_bucket.wal.walg_env
}

output "node_policy_json" {
  value = pgnvme_archive_bucket.wal.node_policy_json
}

# pgBackRest instead of WAL-G: add credentials (repo1-s3-key-type = auto on EC2) and a stanza.
output "pgbackrest_conf" {
  value = join("\n", concat(["[global]", "repo1-s3-key-type=auto"],
  [for k, v in pgnvme_archive_bucket.wal.pgbackrest_options : "${k}=${v}"]))
}
