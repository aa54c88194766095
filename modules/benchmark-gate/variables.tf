variable "server" {
  description = "The PostgreSQL server to benchmark: `host`, and optionally `port` (default 5432), `database` and `username` (default `postgres`) and `sslmode` (libpq's, default `prefer`). The password comes from `PGPASSWORD` or a passfile, never from Terraform."
  type = object({
    host     = string
    port     = optional(number, 5432)
    database = optional(string, "postgres")
    username = optional(string, "postgres")
    sslmode  = optional(string)
  })

  validation {
    condition     = trimspace(var.server.host) != "" && var.server.port >= 1 && var.server.port <= 65535 && floor(var.server.port) == var.server.port
    error_message = "server needs a host (a name or IP address, e.g. \"127.0.0.1\") and a whole port from 1 to 65535."
  }

  validation {
    condition     = var.server.sslmode == null ? true : contains(["disable", "allow", "prefer", "require", "verify-ca", "verify-full"], var.server.sslmode)
    error_message = "server.sslmode must be one of libpq's modes: disable, allow, prefer, require, verify-ca or verify-full (or unset for prefer)."
  }
}

variable "workload" {
  description = "What each client runs: `random-update` (default: the talk's random single-row UPDATE over pgbench_accounts), one of pgbench's built-ins `tpcb-like`, `simple-update`, `select-only`, or the text of a custom pgbench script (`:scale` is set)."
  type        = string
  default     = "random-update"

  validation {
    condition     = contains(["random-update", "tpcb-like", "simple-update", "select-only"], var.workload) || strcontains(var.workload, ";")
    error_message = "workload must be random-update, tpcb-like, simple-update or select-only, or a custom pgbench script with at least one SQL statement ending in ';'."
  }
}

variable "initialize_scale" {
  description = "When set, runs `pgbench -i -s <initialize_scale>` first, which drops and re-creates the `pgbench_*` tables (about 15 MB per scale unit). Unset (default): the tables must exist, and their scale is read from `pgbench_branches`."
  type        = number
  default     = null

  validation {
    condition     = var.initialize_scale == null ? true : var.initialize_scale >= 1 && var.initialize_scale <= 100000 && floor(var.initialize_scale) == var.initialize_scale
    error_message = "initialize_scale must be a whole number from 1 to 100000 (pgnvme's pgbench_scale function converts GiB to scale), or unset to use the existing tables."
  }
}

variable "clients" {
  description = "Concurrent pgbench client sessions; threads default to the smaller of this and the CPUs of the machine running Terraform."
  type        = number
  default     = 8

  validation {
    condition     = var.clients >= 1 && var.clients <= 1000 && floor(var.clients) == var.clients
    error_message = "clients must be a whole number from 1 to 1000 (stay below the server's max_connections)."
  }
}

variable "duration_seconds" {
  description = "Length of the run in seconds. The benchmark runs on every plan and apply of the configuration that uses this module."
  type        = number
  default     = 30

  validation {
    condition     = var.duration_seconds >= 1 && var.duration_seconds <= 3600 && floor(var.duration_seconds) == var.duration_seconds
    error_message = "duration_seconds must be a whole number from 1 to 3600; every plan waits for it, so keep it short."
  }
}

variable "min_tps" {
  description = "Lowest acceptable throughput in transactions per second; unset (default) means no TPS gate."
  type        = number
  default     = null

  validation {
    condition     = var.min_tps == null ? true : var.min_tps > 0
    error_message = "min_tps must be above 0, or unset for no TPS gate."
  }
}

variable "max_latency_p95_ms" {
  description = "Highest acceptable 95th percentile transaction latency in ms; unset (default) means no p95 gate."
  type        = number
  default     = null

  validation {
    condition     = var.max_latency_p95_ms == null ? true : var.max_latency_p95_ms > 0
    error_message = "max_latency_p95_ms must be above 0 ms, or unset for no p95 gate."
  }
}

variable "max_latency_p99_ms" {
  description = "Highest acceptable 99th percentile transaction latency in ms; unset (default) means no p99 gate."
  type        = number
  default     = null

  validation {
    condition     = var.max_latency_p99_ms == null ? true : var.max_latency_p99_ms > 0
    error_message = "max_latency_p99_ms must be above 0 ms, or unset for no p99 gate."
  }
}
