# Parameters for a machine described directly: 16 vCPUs, 64 GiB, 884 GiB of local NVMe.
data "pgnvme_tuning" "m6id_4xlarge" {
  vcpus          = 16
  memory_gib     = 64
  disk_gib       = 884.76
  storage        = "nvme"
  workload       = "oltp"
  postgres_major = 18
}

output "postgresql_conf" {
  value = join("\n", [for k, v in data.pgnvme_tuning.m6id_4xlarge.postgres_parameters : "${k} = '${v}'"])
}
