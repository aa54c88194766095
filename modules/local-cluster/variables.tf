variable "data_dir" {
  description = "Absolute directory for the nodes' data directories (`<data_dir>/<node>`). When Terraform runs as root, PostgreSQL runs as `postgres`, which must be able to reach it: every parent directory needs o+x."
  type        = string

  validation {
    condition     = startswith(var.data_dir, "/") && trimsuffix(var.data_dir, "/") != ""
    error_message = "data_dir must be an absolute path below /, such as /tmp/pgnvme-lab (an empty or relative path, or / itself, is refused)."
  }
}

variable "postgres_major" {
  description = "PostgreSQL major of the nodes: the local platform runs `/usr/lib/postgresql/<major>/bin`, which must be installed on this machine; the parameters are tuned for it. Defaults to 18, the provider's default major."
  type        = number
  default     = 18

  validation {
    condition     = var.postgres_major >= 13 && var.postgres_major <= 18 && floor(var.postgres_major) == var.postgres_major
    error_message = "postgres_major must be a whole number from 13 to 18: the major version `pg_config --version` prints, e.g. 18 for PostgreSQL 18.6."
  }
}

variable "machine" {
  description = "The share of this machine the cluster may use: vCPUs, memory and free disk under data_dir. Every node is tuned for `memory_gib / node_count` and `disk_gib / node_count`; the nodes share the vCPUs, as processes on one machine do."
  type = object({
    vcpus      = number
    memory_gib = number
    disk_gib   = number
  })

  validation {
    condition     = var.machine.vcpus >= 1 && floor(var.machine.vcpus) == var.machine.vcpus
    error_message = "machine.vcpus must be a whole number of at least 1 (`nproc` prints this machine's)."
  }

  validation {
    condition     = var.machine.memory_gib >= 0.5 && var.machine.disk_gib >= 1
    error_message = "machine.memory_gib must be at least 0.5 and machine.disk_gib at least 1 (per node, after dividing by node_count, the same minimums apply)."
  }
}

variable "name" {
  description = "Cluster name: lower-case letters, digits and `-`, starting with a letter (at most 63 characters). Changing it replaces the cluster."
  type        = string
  default     = "lab"

  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,62}$", var.name))
    error_message = "name must start with a lower-case letter and contain only lower-case letters, digits and - (at most 63 characters), e.g. \"lab\"."
  }
}

variable "node_count" {
  description = "Number of nodes, named `node-1` .. `node-N`; `node-1` is the first primary, the others are standbys."
  type        = number
  default     = 3

  validation {
    condition     = var.node_count >= 1 && var.node_count <= 9 && floor(var.node_count) == var.node_count
    error_message = "node_count must be a whole number from 1 to 9 (3 gives a primary and two standbys under ANY 1 quorum commit)."
  }
}

variable "port_base" {
  description = "First TCP port on 127.0.0.1; node `i` listens on `port_base + i - 1`. The node_count ports from it must be free."
  type        = number
  default     = 54320

  validation {
    condition     = var.port_base >= 1024 && var.port_base <= 65527 && floor(var.port_base) == var.port_base
    error_message = "port_base must be a whole number from 1024 to 65527, so that up to 9 consecutive ports stay below 65536."
  }
}

variable "synchronous" {
  description = "Synchronous replication, with CloudNativePG's meanings: `method` `any` (quorum, default) or `first`; `number` of standbys that confirm each commit (default 1, 0 for a single node); `data_durability` `required` (default: commits wait for the standbys) or `preferred` (writes never stop for missing standbys)."
  type = object({
    method          = optional(string, "any")
    number          = optional(number)
    data_durability = optional(string, "required")
  })
  default  = {}
  nullable = false

  validation {
    condition     = contains(["any", "first"], var.synchronous.method)
    error_message = "synchronous.method must be \"any\" (quorum: the fastest standbys confirm) or \"first\" (priority order)."
  }

  validation {
    condition     = contains(["required", "preferred"], var.synchronous.data_durability)
    error_message = "synchronous.data_durability must be \"required\" (never lower the number; commits wait) or \"preferred\" (lower it to the healthy standbys so writes never stop)."
  }

  validation {
    condition     = var.synchronous.number == null ? true : var.synchronous.number >= 0 && var.synchronous.number <= 8 && floor(var.synchronous.number) == var.synchronous.number
    error_message = "synchronous.number must be a whole number from 0 (asynchronous) to 8, and below node_count with data_durability = \"required\"; leave it unset for 1 (0 for a single node)."
  }
}

variable "parameters" {
  description = "PostgreSQL parameters set on top of the tuned ones (these win), e.g. `{ log_min_duration_statement = \"250ms\" }`. A parameter PostgreSQL reloads is applied without a restart; one that needs a restart restarts the nodes one at a time."
  type        = map(string)
  default     = {}
  nullable    = false

  validation {
    condition     = alltrue([for k in keys(var.parameters) : can(regex("^[a-z_][a-z0-9_.]*$", k))])
    error_message = "parameters keys must be PostgreSQL parameter names in lower case (letters, digits, _ and . for extension settings), e.g. work_mem."
  }
}

variable "tls" {
  description = "Serve TLS only, from the cluster's own certificate authority (the resource's `tls` block with its defaults: 90-day certificates renewed by an apply within 7 days of their end): connections without TLS are refused, replication authenticates by client certificate, `connection_uri` carries `sslmode=verify-full`, and the benchmark connects that way. Turning it on or off changes the cluster in place."
  type        = bool
  default     = false
  nullable    = false
}

variable "benchmark" {
  description = "Run pgbench against the primary on every plan and apply (null, the default, runs nothing): `builtin` one of `tpcb-like`, `simple-update`, `select-only`, or unset for the talk's random single-row UPDATE; `scale` (initialised first), `clients`, `duration_seconds`."
  type = object({
    builtin          = optional(string)
    scale            = optional(number, 10)
    clients          = optional(number, 8)
    duration_seconds = optional(number, 15)
  })
  default = null

  validation {
    condition     = var.benchmark == null ? true : var.benchmark.builtin == null ? true : contains(["tpcb-like", "simple-update", "select-only"], var.benchmark.builtin)
    error_message = "benchmark.builtin must be \"tpcb-like\", \"simple-update\" or \"select-only\", or unset for the talk's random UPDATE script."
  }

  validation {
    condition = var.benchmark == null ? true : (
      var.benchmark.scale >= 1 && var.benchmark.scale <= 10000 && floor(var.benchmark.scale) == var.benchmark.scale &&
      var.benchmark.clients >= 1 && var.benchmark.clients <= 1000 && floor(var.benchmark.clients) == var.benchmark.clients &&
      var.benchmark.duration_seconds >= 1 && var.benchmark.duration_seconds <= 3600 && floor(var.benchmark.duration_seconds) == var.benchmark.duration_seconds
    )
    error_message = "benchmark needs whole numbers: scale 1 to 10000 (about 15 MB each), clients 1 to 1000, duration_seconds 1 to 3600 (the benchmark runs on every plan: keep it short)."
  }
}
