# Import by host:port/database of the primary; the live settings become the state.
terraform import pgnvme_synchronous_replication.orders 10.0.1.10:5432/postgres
