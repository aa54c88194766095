# Every variable's validation, and the per-node precondition, at plan level (nothing is created).
# data_dir and port_base come from the command line (postgres_major defaults to 18, which make test installs):
# `terraform test -var data_dir=/tmp/x/c -var port_base=45000` (make test passes them).

variables {
  machine = { vcpus = 2, memory_gib = 3, disk_gib = 30 }
}

run "valid_inputs_plan" {
  command = plan

  assert {
    condition     = pgnvme_cluster.this.synchronous.number == 1 && pgnvme_cluster.this.synchronous.method == "any"
    error_message = "Three nodes should default to ANY 1."
  }
  assert {
    condition     = data.pgnvme_tuning.node.memory_gib == 1 && data.pgnvme_tuning.node.disk_gib == 10
    error_message = "Each of 3 nodes should be tuned for a third of the machine's memory and disk."
  }
}

run "single_node_is_asynchronous" {
  command = plan

  variables {
    node_count = 1
  }

  assert {
    condition     = pgnvme_cluster.this.synchronous.number == 0
    error_message = "A single node has no standby to wait for."
  }
}

run "overrides_win" {
  command = plan

  variables {
    parameters = { work_mem = "7MB", log_min_duration_statement = "250ms" }
  }

  assert {
    condition     = pgnvme_cluster.this.parameters["work_mem"] == "7MB" && pgnvme_cluster.this.parameters["log_min_duration_statement"] == "250ms"
    error_message = "parameters should override the tuned values."
  }
  assert {
    condition     = pgnvme_cluster.this.parameters["shared_buffers"] == data.pgnvme_tuning.node.postgres_parameters["shared_buffers"]
    error_message = "Tuned parameters that are not overridden should stay."
  }
}

run "relative_data_dir" {
  command = plan

  variables {
    data_dir = "lab"
  }

  expect_failures = [var.data_dir]
}

run "postgres_major_out_of_range" {
  command = plan

  variables {
    postgres_major = 12
  }

  expect_failures = [var.postgres_major]
}

run "fractional_vcpus" {
  command = plan

  variables {
    machine = { vcpus = 1.5, memory_gib = 3, disk_gib = 30 }
  }

  expect_failures = [var.machine]
}

run "too_little_memory" {
  command = plan

  variables {
    machine = { vcpus = 2, memory_gib = 0.25, disk_gib = 30 }
  }

  expect_failures = [var.machine]
}

run "too_little_per_node" {
  command = plan

  variables {
    machine = { vcpus = 2, memory_gib = 1, disk_gib = 30 }
  }

  expect_failures = [data.pgnvme_tuning.node]
}

run "invalid_name" {
  command = plan

  variables {
    name = "Lab_1"
  }

  expect_failures = [var.name]
}

run "too_many_nodes" {
  command = plan

  variables {
    node_count = 10
  }

  expect_failures = [var.node_count]
}

run "privileged_port" {
  command = plan

  variables {
    port_base = 80
  }

  expect_failures = [var.port_base]
}

run "unknown_synchronous_method" {
  command = plan

  variables {
    synchronous = { method = "all" }
  }

  expect_failures = [var.synchronous]
}

run "unknown_data_durability" {
  command = plan

  variables {
    synchronous = { data_durability = "best-effort" }
  }

  expect_failures = [var.synchronous]
}

run "negative_synchronous_number" {
  command = plan

  variables {
    synchronous = { number = -1 }
  }

  expect_failures = [var.synchronous]
}

run "parameter_name_not_lower_case" {
  command = plan

  variables {
    parameters = { "Work Mem" = "8MB" }
  }

  expect_failures = [var.parameters]
}

run "unknown_builtin" {
  command = plan

  variables {
    benchmark = { builtin = "tpcc" }
  }

  expect_failures = [var.benchmark]
}

run "benchmark_too_long" {
  command = plan

  variables {
    benchmark = { duration_seconds = 7200 }
  }

  expect_failures = [var.benchmark]
}
