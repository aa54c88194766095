package bootstrap

// WALGRestoreScript is a node's WAL-G restore_command script (ec2/walg-restore.sh: wal-fetch with the
// archive's environment file, a segment the archive lacks reported as the end of the archive, any other
// failure of a point-in-time recovery stopping PostgreSQL instead of ending recovery early) for a server
// that is not a node: the restore drill's scratch server on the machine that runs Terraform. path is
// where the script is written, walg the wal-g executable, dataDir the server's data directory and envFile
// WAL-G's environment file; cluster and node name the server in the script's header.
func WALGRestoreScript(cluster, node, path, walg, dataDir, envFile string) (string, error) {
	v := ec2View{Cluster: cluster, Node: node, WALGBin: walg, DataDir: dataDir, WALGEnv: envFile}
	v.Scripts.WALGRestore = path
	return execTemplate("walg-restore.sh", v)
}
