# Import a local cluster by its local.data_dir: the cluster keeps a manifest of its configuration there.
terraform import pgnvme_cluster.demo local:/var/lib/pgnvme/demo

# Import a cluster on EC2 by its region and name: its tags find the instances and network interfaces.
terraform import pgnvme_cluster.orders aws:eu-west-1:orders
