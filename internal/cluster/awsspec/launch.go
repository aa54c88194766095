package awsspec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Tags that record, on each instance, what it was launched with, so that a change names its reason.
const (
	TagRootVolume       = "pgnvme:root-volume-gib"
	TagKeyName          = "pgnvme:key-name"
	TagUserData         = "pgnvme:user-data"
	TagPlacement        = "pgnvme:placement-group"
	TagMetadataHopLimit = "pgnvme:metadata-hop-limit"
)

// Launch is what a node's machine is launched with. A change of any of it needs a new machine (the
// provider never modifies an instance in place: a stop wipes its instance store), so the list of fields is
// the list of reasons a node is replaced; everything else changes on the running cluster. Each field is
// one row of launchSettings, which reads it from the block, fingerprints, tags, checks it and names its
// change.
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
	// MetadataHopLimit is the instance metadata service's PUT response hop limit (IMDSv2 stays required).
	MetadataHopLimit int
}

// launchSetting is one row of the launch: one reason a node's machine is replaced (as CloudNativePG's
// rollout checkers, one row per reason).
type launchSetting struct {
	// name is the attribute a plan names ("aws.key_name"); its path is the name split at dots.
	name string
	// tag is the instance tag that records the value; "" for what EC2 shows itself (ec2 reads it).
	tag string
	ec2 func(instanceType, ami string) string
	// read sets the setting in l from the block (the image and the user-data identity come apart).
	read func(l *Launch, a *Block, ami string, identity []byte)
	// value is the setting in l as its tag records it.
	value func(l Launch) string
	// plain values (numbers, hashes) enter the fingerprint as they are, others with their length first.
	plain bool
	// added marks a row added after the fingerprint's first rows: it enters the fingerprint only when its
	// value is not before, the value of every instance launched before the row existed, so that adding a
	// row replaces no machine; an instance without its tag was launched with before.
	added  bool
	before string
	// check is the setting's rule on the block: a summary and detail when a breaks it, "" when it holds.
	check func(a *Block) (summary, detail string)
	// reason names a change from old to new; nil: "<name> old -> new".
	reason func(old, new string) string
}

// launchSettings are the rows of a launch, in fingerprint order: new rows go at the end, with added set.
var launchSettings = []launchSetting{
	{
		name: "aws.instance_type", ec2: func(instanceType, _ string) string { return instanceType },
		read:  func(l *Launch, a *Block, _ string, _ []byte) { l.InstanceType = a.InstanceType },
		value: func(l Launch) string { return l.InstanceType },
	},
	{
		name: "aws.ami_id", ec2: func(_, ami string) string { return ami },
		read:  func(l *Launch, _ *Block, ami string, _ []byte) { l.AMI = ami },
		value: func(l Launch) string { return l.AMI },
	},
	{
		name: "aws.root_volume_gib", tag: TagRootVolume, plain: true,
		read:  func(l *Launch, a *Block, _ string, _ []byte) { l.RootVolumeGiB = a.RootVolumeGiB },
		value: func(l Launch) string { return strconv.Itoa(l.RootVolumeGiB) },
		check: func(a *Block) (string, string) {
			if a.RootVolumeGiB < MinRootVolumeGiB || a.RootVolumeGiB > MaxRootVolumeGiB {
				return "Invalid Root Volume Size", fmt.Sprintf("aws.root_volume_gib is %d; give %d to %d GiB (the default %d holds the system, etcd's data and the logs; PostgreSQL's data is on the instance store).",
					a.RootVolumeGiB, MinRootVolumeGiB, MaxRootVolumeGiB, DefaultRootVolumeGiB)
			}
			return "", ""
		},
	},
	{
		name: "aws.key_name", tag: TagKeyName,
		read:  func(l *Launch, a *Block, _ string, _ []byte) { l.KeyName = a.KeyName },
		value: func(l Launch) string { return l.KeyName },
		check: func(a *Block) (string, string) {
			if a.KeyName != "" && !ec2Name(a.KeyName) {
				return "Invalid Key Pair Name", fmt.Sprintf("aws.key_name %q is not an EC2 key pair name; give the name of an existing key pair, 1 to %d printable ASCII characters, or leave it unset for no SSH key.",
					a.KeyName, maxKeyNameBytes)
			}
			return "", ""
		},
	},
	{
		name: "aws.placement_group", tag: TagPlacement,
		read:  func(l *Launch, a *Block, _ string, _ []byte) { l.PlacementGroup = a.PlacementGroup },
		value: func(l Launch) string { return l.PlacementGroup },
		check: func(a *Block) (string, string) {
			if a.PlacementGroup != "" && !ec2Name(a.PlacementGroup) {
				return "Invalid Placement Group Name", fmt.Sprintf("aws.placement_group %q is not an EC2 placement group name; give the name of an existing spread or partition placement group, 1 to %d printable ASCII characters, or leave it unset.",
					a.PlacementGroup, maxKeyNameBytes)
			}
			return "", ""
		},
	},
	{
		name: "user_data", tag: TagUserData, plain: true,
		read:  func(l *Launch, _ *Block, _ string, identity []byte) { l.UserData = hash(identity) },
		value: func(l Launch) string { return l.UserData },
		reason: func(string, string) string {
			return "its user-data changed (what boots the node: the archive, the PostgreSQL major version, the addresses of its peers and of the clients allowed, the disks)"
		},
	},
	{
		name: "aws.metadata_hop_limit", tag: TagMetadataHopLimit, plain: true, added: true, before: strconv.Itoa(DefaultMetadataHopLimit),
		read:  func(l *Launch, a *Block, _ string, _ []byte) { l.MetadataHopLimit = a.MetadataHopLimit },
		value: func(l Launch) string { return strconv.Itoa(l.MetadataHopLimit) },
		check: func(a *Block) (string, string) {
			if a.MetadataHopLimit < MinMetadataHopLimit || a.MetadataHopLimit > MaxMetadataHopLimit {
				return "Invalid Metadata Hop Limit", fmt.Sprintf("aws.metadata_hop_limit is %d; give %d to %d network hops (the default %d lets a container on the node reach the instance metadata; 1 keeps it to the host).",
					a.MetadataHopLimit, MinMetadataHopLimit, MaxMetadataHopLimit, DefaultMetadataHopLimit)
			}
			return "", ""
		},
	},
}

// NewLaunch is the launch of a node whose user-data identity is identity.
func NewLaunch(a *Block, ami string, identity []byte) Launch {
	var l Launch
	for _, s := range launchSettings {
		s.read(&l, a, ami, identity)
	}
	return l
}

// Fingerprint is the launch's identity, 16 hex digits of a SHA-256 over every row: an instance whose
// TagConfig differs was launched otherwise.
func (l Launch) Fingerprint() string {
	parts := make([]string, 0, len(launchSettings))
	for _, s := range launchSettings {
		v := s.value(l)
		switch {
		case s.added && v == s.before:
		case s.added:
			parts = append(parts, fmt.Sprintf("%s=%d:%s", s.name, len(v), v))
		case s.plain:
			parts = append(parts, v)
		default:
			parts = append(parts, fmt.Sprintf("%d:%s", len(v), v))
		}
	}
	return hash([]byte(strings.Join(parts, "\n")))
}

// Tags are the tags an instance launched so carries (the instance type and AMI EC2 shows itself).
func (l Launch) Tags() map[string]string {
	out := map[string]string{TagConfig: l.Fingerprint()}
	for _, s := range launchSettings {
		if s.tag != "" {
			out[s.tag] = s.value(l)
		}
	}
	return out
}

// Changes names what differs between an instance (its type, AMI and tags) and l, each "aws.<attribute>
// old -> new"; none when the instance was launched so. An instance launched before its tags named each
// field (its fingerprint alone differs) gets one general reason.
func (l Launch) Changes(instanceType, ami string, tags map[string]string) []string {
	if tags[TagConfig] == l.Fingerprint() {
		return nil
	}
	_, named := tags[TagUserData]
	var out []string
	for _, s := range launchSettings {
		var old string
		switch v, ok := tags[s.tag]; {
		case s.tag == "":
			old = s.ec2(instanceType, ami)
		case !named:
			continue
		case ok:
			old = v
		default:
			old = s.before
		}
		if v := s.value(l); old != v {
			out = append(out, s.describe(old, v))
		}
	}
	if len(out) == 0 {
		out = append(out, "it was launched with another configuration (its "+TagConfig+" tag differs)")
	}
	return out
}

func (s launchSetting) describe(old, new string) string {
	if s.reason != nil {
		return s.reason(old, new)
	}
	return fmt.Sprintf("%s %s -> %s", s.name, orNone(old), orNone(new))
}

// launch applies each launch setting's rule to the block, at the setting's attribute path.
func (v *awsCheck) launch() {
	for _, s := range launchSettings {
		if s.check == nil {
			continue
		}
		if summary, detail := s.check(v.a); summary != "" {
			v.add(strings.Split(s.name, "."), summary, "%s", detail)
		}
	}
}

func ec2Name(s string) bool { return len(s) <= maxKeyNameBytes && printableASCIIOnly(s) }

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
