# Import by local.data_dir: the cluster keeps a manifest of its configuration there.
terraform import pgnvme_cluster.demo /var/lib/pgnvme/demo
