output "size_of_scale_1000" {
  value = provider::pgnvme::pgbench_size_gib(1000)
}
