output "scale_for_482_gib" {
  # The pgbench scale whose tables and indexes take at least 482 GiB.
  value = provider::pgnvme::pgbench_scale(482)
}
