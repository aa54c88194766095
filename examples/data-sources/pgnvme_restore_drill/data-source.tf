# Restore the newest backup of the orders cluster's archive into a scratch node on this machine, check it,
# and remove it. The postconditions fail the plan (a scheduled `terraform plan` then fails loudly); a check
# block would only warn. The options are pgnvme_archive_bucket's pgbackrest_options plus credentials: here
# the instance profile of the EC2 runner (repo1-s3-key-type = auto), which needs s3:ListBucket and
# s3:GetObject on the archive's prefix.
data "pgnvme_restore_drill" "orders" {
  archive {
    pgbackrest_options = {
      "repo1-s3-key-type" = "auto"
      "repo1-type"        = "s3"
      "repo1-s3-bucket"   = "orders-wal-archive"
      "repo1-s3-region"   = "eu-west-1"
      "repo1-s3-endpoint" = "s3.eu-west-1.amazonaws.com"
      "repo1-path"        = "/orders/pgbackrest"
    }
    stanza = "orders"
  }
  check_sql = "SELECT count(*) > 0 FROM orders"

  lifecycle {
    postcondition {
      condition     = self.verification_ok && self.check_ok
      error_message = "The orders archive did not pass its restore drill: ${self.verification_detail}"
    }
    postcondition {
      condition     = self.restore_seconds < 1800
      error_message = "Restoring the orders archive took ${self.restore_seconds} s, over the 30-minute RTO."
    }
  }
}

output "orders_rto_seconds" {
  value = data.pgnvme_restore_drill.orders.restore_seconds
}
