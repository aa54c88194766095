# Import by bucket name. The cluster prefix and compression come back from the provider's own tags;
# force_destroy starts as false.
terraform import pgnvme_archive_bucket.wal acme-orders-wal-archive
