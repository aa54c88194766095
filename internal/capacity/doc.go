// Package capacity sizes PostgreSQL on local NVMe and tunes it.
//
// Sizing ([Size], [Rank], [Evaluate]) turns a dataset, its growth and the
// headroom wanted into the NVMe each node needs, then ranks the instance
// types that hold it (the candidates come from the catalog package, already
// filtered by vCPUs, memory, architecture, family and zone).
//
// Tuning ([Tune], [Rules]) derives postgresql.conf parameters from the
// machine's facts (vCPUs, memory, data disk size and kind, workload, planned
// connections, major version), in the spirit of PGTune and timescaledb-tune,
// with values PostgreSQL accepts verbatim.
//
// The package is pure: it imports only the standard library and catalog.
package capacity
