// Package catalog holds the facts about EC2 instance types with local SSD
// instance storage (NVMe or not) and the pure decisions made on them:
// classification from DescribeInstanceTypes data, zone name/ID resolution,
// filtering and ordering.
//
// It imports only the standard library. A snapshot of the facts for a few
// regions is compiled into the binary (see [Embedded]); it is produced by the
// generator in ./gen from DescribeInstanceTypes, DescribeInstanceTypeOfferings
// and DescribeAvailabilityZones, with the date and origin of the data recorded
// inside it.
//
// Zone IDs (use1-az6) name the same physical zone in every account; zone
// names (us-east-1a) are mapped to IDs per account. Offerings are therefore
// kept by zone ID, and the name/ID mapping of an embedded snapshot is the one
// of the account (or emulator) it was read from.
package catalog

//go:generate go run ./gen -out snapshot.json.gz
