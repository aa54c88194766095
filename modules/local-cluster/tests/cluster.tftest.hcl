# A real three-node cluster on this machine (PostgreSQL processes on 127.0.0.1), a reload-only parameter
# change and a benchmark-duration change that must not replace it, and the optional benchmark.
# data_dir and port_base come from the command line (postgres_major defaults to 18, which make test installs):
# `terraform test -var data_dir=/tmp/x/c -var port_base=45000` (make test passes them).

variables {
  name       = "tf-acc-lab"
  machine    = { vcpus = 2, memory_gib = 3, disk_gib = 30 }
  parameters = { fsync = "off" } # speed; durability is not what this test checks
}

run "create" {
  assert {
    condition     = [for n in output.nodes : n.role] == ["primary", "standby", "standby"] && alltrue([for n in output.nodes : n.state == "running"])
    error_message = "Three running nodes, node-1 the primary: ${jsonencode(output.nodes)}"
  }
  assert {
    condition     = output.synchronous_standby_names == "ANY 1 (\"node-2\", \"node-3\")"
    error_message = "The quorum should be ANY 1 of the two standbys: ${output.synchronous_standby_names}"
  }
  assert {
    condition     = output.primary.port == var.port_base && startswith(output.connection_uri, "postgresql://")
    error_message = "The primary should listen on port_base: ${jsonencode(output.primary)}"
  }
  assert {
    condition     = output.parameters["shared_buffers"] == data.pgnvme_tuning.node.postgres_parameters["shared_buffers"] && output.parameters["fsync"] == "off"
    error_message = "The nodes should run the tuned parameters with the overrides."
  }
  assert {
    condition     = length(output.data_dirs) == 3 && output.benchmark == null
    error_message = "One data directory per node, and no benchmark unless asked."
  }
}

# A parameter PostgreSQL reloads: planned as an in-place update. Under a replacement the planned
# synchronous_standby_names would be unknown (a new cluster's quorum is known only after the apply), and an
# unknown condition fails the run.
run "reloadable_parameter_plans_in_place" {
  command = plan

  variables {
    parameters = { fsync = "off", work_mem = "8MB" }
  }

  assert {
    condition     = pgnvme_cluster.this.parameters["work_mem"] == "8MB"
    error_message = "The plan should carry the new work_mem."
  }
  assert {
    condition     = pgnvme_cluster.this.synchronous_standby_names == run.create.synchronous_standby_names
    error_message = "A reload-only change should not replace the cluster."
  }
  assert {
    condition     = pgnvme_cluster.this.local.data_dirs == run.create.data_dirs
    error_message = "A reload-only change should keep every node's data directory."
  }
}

run "reloadable_parameter_applied" {
  variables {
    parameters = { fsync = "off", work_mem = "8MB" }
  }

  assert {
    condition     = output.parameters["work_mem"] == "8MB" && output.synchronous_standby_names == run.create.synchronous_standby_names
    error_message = "work_mem should be applied with the quorum unchanged."
  }
  assert {
    condition     = [for n in output.nodes : n.role] == ["primary", "standby", "standby"] && alltrue([for n in output.nodes : n.state == "running"])
    error_message = "Every node should still run in its role: ${jsonencode(output.nodes)}"
  }
}

# TLS turned on in place, and the benchmark over it (the module gives pgbench verify-full and the
# authority's file).
run "benchmark" {
  variables {
    parameters = { fsync = "off", work_mem = "8MB" }
    benchmark  = { scale = 1, clients = 2, duration_seconds = 2 }
    tls        = true
  }

  assert {
    condition     = strcontains(output.connection_uri, "sslmode=verify-full") && length(output.tls.not_after) == 4 && startswith(output.tls.ca_certificate, "-----BEGIN CERTIFICATE-----")
    error_message = "With tls the URI should verify the server, and every node and the client should have a certificate: ${output.connection_uri}"
  }
  assert {
    condition     = output.data_dirs == run.create.data_dirs && [for n in output.nodes : n.role] == ["primary", "standby", "standby"]
    error_message = "TLS turned on should change the cluster in place: ${jsonencode(output.nodes)}"
  }

  assert {
    condition     = output.benchmark.tps > 0 && output.benchmark.failed_transactions == 0
    error_message = "The talk's random UPDATE should run: ${jsonencode(output.benchmark)}"
  }
  assert {
    condition     = output.benchmark.latency_ms.p50 <= output.benchmark.latency_ms.p95 && output.benchmark.latency_ms.p95 <= output.benchmark.latency_ms.p99
    error_message = "Percentiles should be ordered: ${jsonencode(output.benchmark.latency_ms)}"
  }
}

# Only the benchmark changes: the cluster stays as it is (the same assertion as above).
run "benchmark_duration_plans_no_replacement" {
  command = plan

  variables {
    parameters = { fsync = "off", work_mem = "8MB" }
    benchmark  = { scale = 1, clients = 2, duration_seconds = 1 }
    tls        = true
  }

  assert {
    condition     = pgnvme_cluster.this.synchronous_standby_names == run.create.synchronous_standby_names && pgnvme_cluster.this.local.data_dirs == run.create.data_dirs
    error_message = "A benchmark change should not replace the cluster."
  }
  assert {
    condition     = data.pgnvme_pgbench.this[0].duration_seconds == 1
    error_message = "The plan should read the benchmark with the new duration."
  }
}
