# Import a local cluster by its local.data_dir: the cluster keeps a manifest of its configuration there.
terraform import pgnvme_cluster.demo local:/var/lib/pgnvme/demo
