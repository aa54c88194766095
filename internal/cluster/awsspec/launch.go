package awsspec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
)

// Tags that record, on each instance, what it was launched with, so that a change names its reason.
const (
	TagRootVolume = "pgnvme:root-volume-gib"
	TagKeyName    = "pgnvme:key-name"
	TagUserData   = "pgnvme:user-data"
	TagPlacement  = "pgnvme:placement-group"
)

// Launch is what a node's machine is launched with. A change of any of it needs a new machine (the
// provider never modifies an instance in place: a stop wipes its instance store), so the list of fields is
// the list of reasons a node is replaced; everything else changes on the running cluster.
type Launch struct {
	InstanceType  string
	AMI           string
	RootVolumeGiB int
	// KeyName is the EC2 key pair, "" for none; PlacementGroup the placement group, "" for none.
	KeyName        string
	PlacementGroup string
	// UserData is the hash of the user-data's identity (bootstrap.UserData.Identity: the user-data without
	// Patroni's dynamic configuration, which the running cluster changes through PATCH /config).
	UserData string
}

// NewLaunch is the launch of a node whose user-data identity is identity.
func NewLaunch(a *Block, ami string, identity []byte) Launch {
	return Launch{InstanceType: a.InstanceType, AMI: ami, RootVolumeGiB: a.RootVolumeGiB, KeyName: a.KeyName, PlacementGroup: a.PlacementGroup, UserData: hash(identity)}
}

// Fingerprint is the launch's identity, 16 hex digits of a SHA-256 over every field: an instance whose
// TagConfig differs was launched otherwise.
func (l Launch) Fingerprint() string {
	return hash(fmt.Appendf(nil, "%d:%s\n%d:%s\n%d\n%d:%s\n%d:%s\n%s", len(l.InstanceType), l.InstanceType, len(l.AMI), l.AMI,
		l.RootVolumeGiB, len(l.KeyName), l.KeyName, len(l.PlacementGroup), l.PlacementGroup, l.UserData))
}

// Tags are the tags an instance launched so carries (the instance type and AMI EC2 shows itself).
func (l Launch) Tags() map[string]string {
	return map[string]string{TagConfig: l.Fingerprint(), TagRootVolume: strconv.Itoa(l.RootVolumeGiB), TagKeyName: l.KeyName, TagPlacement: l.PlacementGroup, TagUserData: l.UserData}
}

// Changes names what differs between an instance (its type, AMI and tags) and l, each "aws.<attribute>
// old -> new"; none when the instance was launched so. An instance launched before its tags named each
// field (its fingerprint alone differs) gets one general reason.
func (l Launch) Changes(instanceType, ami string, tags map[string]string) []string {
	if tags[TagConfig] == l.Fingerprint() {
		return nil
	}
	var out []string
	diff := func(name, old, new string) {
		if old != new {
			out = append(out, fmt.Sprintf("%s %s -> %s", name, orNone(old), orNone(new)))
		}
	}
	diff("aws.instance_type", instanceType, l.InstanceType)
	diff("aws.ami_id", ami, l.AMI)
	if _, ok := tags[TagUserData]; ok {
		diff("aws.root_volume_gib", tags[TagRootVolume], strconv.Itoa(l.RootVolumeGiB))
		diff("aws.key_name", tags[TagKeyName], l.KeyName)
		diff("aws.placement_group", tags[TagPlacement], l.PlacementGroup)
		if tags[TagUserData] != l.UserData {
			out = append(out, "its user-data changed (what boots the node: the archive, the PostgreSQL major version, the addresses of its peers and of the clients allowed, the disks)")
		}
	}
	if len(out) == 0 {
		out = append(out, "it was launched with another configuration (its "+TagConfig+" tag differs)")
	}
	return out
}

func hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
