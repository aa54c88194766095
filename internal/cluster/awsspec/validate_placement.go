package awsspec

import (
	"maps"
	"slices"
	"strings"

	"github.com/pgnvme/terraform-provider-pgnvme/internal/bootstrap"
	"github.com/pgnvme/terraform-provider-pgnvme/internal/catalog"
)

// exampleSubnetID is the subnet ID messages show.
const exampleSubnetID = "subnet-0123456789abcdef0"

// instanceType checks aws.instance_type against the catalog.
func (v *awsCheck) instanceType() {
	at := awsAt("instance_type")
	snap, err := catalog.Embedded()
	if err != nil {
		v.add(at, "Instance Type Catalog Unreadable", "%s.", capitalize(err.Error()))
		return
	}
	v.snap = snap
	name := v.a.InstanceType
	switch {
	case name == "":
		v.add(at, "Missing Instance Type", "aws.instance_type is empty; choose an instance type with instance-store NVMe, such as m6id.large or i4i.large (the pgnvme_instance_types data source lists them).")
		return
	case !instanceTypePattern.MatchString(name):
		v.add(at, "Invalid Instance Type", "aws.instance_type %q is not an EC2 instance type name (family.size, such as m6id.large); choose one from the pgnvme_instance_types data source.", name)
		return
	}
	i, found := slices.BinarySearchFunc(snap.Types, name, func(t catalog.InstanceType, n string) int { return strings.Compare(t.Name, n) })
	if !found {
		v.add(at, "No Instance-Store NVMe", "Instance type %s has no instance-store NVMe: it is not among the %d types with SSD instance storage in the provider's catalog (read %s). "+
			"pgnvme keeps PostgreSQL's data on local NVMe only; choose a type from the pgnvme_instance_types data source, such as m6id.large or i4i.large.", name, len(snap.Types), snap.Date)
		return
	}
	t := snap.Types[i]
	arch := awsArchitecture(t)
	switch {
	case !t.NVMe():
		v.add(at, "Instance Storage Is Not NVMe", "Instance type %s has instance storage, but not NVMe (an older generation whose disks attach as plain block devices); "+
			"pgnvme finds and prepares instance-store NVMe disks only: choose a current type from the pgnvme_instance_types data source, such as m6id.large or i4i.large.", name)
	case t.SpecialPurpose():
		v.add(at, "Special-Purpose Instance Type", "Instance type %s is a special-purpose type (%s): you would pay for hardware PostgreSQL does not use, or need a dedicated host running macOS; "+
			"choose a general-purpose, memory- or storage-optimized type with instance-store NVMe from the pgnvme_instance_types data source, such as m6id.large or i4i.large.", name, specialPurposeKind(t))
	case arch == "":
		v.add(at, "Unsupported Architecture", "Instance type %s runs on %s; pgnvme's nodes run Debian on %s or %s only: choose another type from the pgnvme_instance_types data source.",
			name, strings.Join(t.Architectures, ", "), bootstrap.ArchX86_64, bootstrap.ArchARM64)
	default:
		v.typ = &t
	}
}

// awsArchitecture is the architecture the nodes of type t run, "" when pgnvme has no image for any of its
// architectures.
func awsArchitecture(t catalog.InstanceType) string {
	for _, a := range []string{bootstrap.ArchX86_64, bootstrap.ArchARM64} {
		if slices.Contains(t.Architectures, a) {
			return a
		}
	}
	return ""
}

func specialPurposeKind(t catalog.InstanceType) string {
	if len(t.Accelerators) > 0 {
		return "it carries " + strings.Join(t.Accelerators, ", ") + " accelerators"
	}
	return "a Mac"
}

// placement checks the region, each node's zone, the subnets, and that the region offers the type.
func (v *awsCheck) placement() {
	nodeAt := []string{"node"}
	a := v.a
	zoneOf := map[string]string{} // zone -> the first node in it
	regionOf := map[string]string{}
	var zones []string // the nodes' valid zones, in node order, each once
	if g := v.s.Given; g != nil && len(g.Nodes) == 0 {
		// The nodes are node-1 .. node-N from node_count (or the default): none has a zone, and saying so node by
		// node would name nodes the user never wrote.
		at, what := []string{"node"}, "a cluster without node blocks"
		if g.NodeCount != nil {
			at, what = []string{"node_count"}, "node_count"
		}
		v.add(at, "Nodes Need Zones", "On aws every node runs in an availability zone of its own, and %s gives the nodes none: write one node "+
			"block per node with its zone, such as node { name = \"node-1\" zone = \"%s\" }, %d of them in %d zones (the aws-cluster module "+
			"places them with pgnvme_placement).", what, exampleZone(a.Region), len(v.s.Nodes), len(v.s.Nodes))
		return
	}
	for _, n := range v.s.Nodes {
		m := awsZonePattern.FindStringSubmatch(n.Zone)
		switch {
		case n.Zone == "":
			v.add(nodeAt, "Missing Availability Zone", "Node %s has no zone; on aws every node needs zone = the availability zone it runs in, such as %s, each node in a zone of its own.", n.Name, exampleZone(a.Region))
			continue
		case m == nil:
			v.add(nodeAt, "Invalid Availability Zone", "Node %s has zone %q, which is not an availability zone name; use one such as %s (the region followed by the zone's letter).", n.Name, n.Zone, exampleZone(a.Region))
			continue
		}
		v.zoneOK[n.Name] = true
		regionOf[n.Zone] = m[1]
		if prev, dup := zoneOf[n.Zone]; dup {
			v.add(nodeAt, "Nodes Share A Zone", "Nodes %s and %s are both in zone %s; losing that zone would take both members at once (and with them the synchronous standby or etcd's majority). "+
				"Put every node in a zone of its own; a region's zones bound the cluster's size.", prev, n.Name, n.Zone)
			continue
		}
		zoneOf[n.Zone] = n.Name
		zones = append(zones, n.Zone)
	}

	// The region: aws.region when set, else the one region of the nodes' zones.
	switch {
	case a.Region != "" && !awsRegionPattern.MatchString(a.Region):
		v.add(awsAt("region"), "Invalid Region", "aws.region %q is not an AWS region name; use one such as eu-west-1, or leave it unset for the provider's region.", a.Region)
	case a.Region != "":
		v.region = a.Region
		for _, n := range v.s.Nodes {
			if r := regionOf[n.Zone]; v.zoneOK[n.Name] && r != a.Region {
				v.add(nodeAt, "Zone Outside Region", "Node %s is in zone %s, which is in region %s, not in the cluster's region %s (aws.region); put it in a zone of %s, such as %sa.", n.Name, n.Zone, r, a.Region, a.Region, a.Region)
			}
		}
	}
	if a.Region == "" || v.region == "" {
		var regions []string
		for _, z := range zones {
			if !slices.Contains(regions, regionOf[z]) {
				regions = append(regions, regionOf[z])
			}
		}
		switch {
		case len(regions) > 1:
			v.add(nodeAt, "Zones In Several Regions", "The nodes' zones are in %d regions (%s); a cluster runs in one region: put every node in a zone of the same region, and set aws.region when it is not the provider's.",
				len(regions), strings.Join(regions, ", "))
		case len(regions) == 1 && a.Region == "":
			v.region = regions[0]
		}
	}

	v.subnets(zones)

	// What the provider's catalog knows of the region: its zone names and where the type is offered.
	if v.snap == nil || v.region == "" {
		return
	}
	r, ok := v.snap.Region(v.region)
	if !ok {
		return
	}
	var inRegion []string
	for _, n := range v.s.Nodes {
		if !v.zoneOK[n.Name] || regionOf[n.Zone] != v.region || len(n.Zone) != len(v.region)+1 {
			continue // the catalog knows the region's availability zones, not its Local Zones
		}
		if _, ok := r.ZoneByName(n.Zone); !ok {
			v.add(nodeAt, "Unknown Availability Zone", "Node %s is in zone %s, which is not one of region %s's zones (%s, in the provider's catalog read %s); choose one of them.",
				n.Name, n.Zone, r.Name, strings.Join(zoneNames(r), ", "), v.snap.Date)
			continue
		}
		if !slices.Contains(inRegion, n.Zone) {
			inRegion = append(inRegion, n.Zone)
		}
	}
	if v.typ == nil {
		return
	}
	offered := r.Offerings[v.typ.Name]
	switch {
	case len(offered) == 0:
		v.add(awsAt("instance_type"), "Instance Type Not Offered", "Instance type %s is not offered in region %s (the provider's catalog, read %s); choose a type the pgnvme_instance_types data source lists for %s.",
			v.typ.Name, r.Name, v.snap.Date, r.Name)
	case len(inRegion) > len(offered):
		v.add(awsAt("instance_type"), "Instance Type Offered In Too Few Zones", "Instance type %s is offered in only %d of region %s's zones (zone IDs %s, in the provider's catalog read %s), but the nodes are in %d zones (%s); "+
			"choose a type offered in every zone the cluster uses, or use fewer nodes.", v.typ.Name, len(offered), r.Name, strings.Join(offered, ", "), v.snap.Date, len(inRegion), strings.Join(inRegion, ", "))
	}
}

// subnets checks aws.subnet_ids: well-formed, one zone per subnet, and a subnet for every node's zone.
// An entry for a zone no node is in is allowed: it is not used until a node moves there.
func (v *awsCheck) subnets(zones []string) {
	at := awsAt("subnet_ids")
	zoneOf := map[string]string{} // subnet -> zone
	for _, z := range slices.Sorted(maps.Keys(v.a.SubnetIDs)) {
		id := v.a.SubnetIDs[z]
		if !awsZonePattern.MatchString(z) {
			v.add(at, "Invalid Subnet Zone", "aws.subnet_ids has the key %q, which is not an availability zone name; key each subnet by its zone, such as \"%s\" = %q.", z, exampleZone(v.a.Region), exampleSubnetID)
		}
		switch prev, dup := zoneOf[id]; {
		case !subnetIDPattern.MatchString(id):
			v.add(at, "Invalid Subnet ID", "aws.subnet_ids[%q] is %q, which is not a subnet ID; give one such as %s (subnet- and 8 to 17 hex digits).", z, id, exampleSubnetID)
		case dup:
			v.add(at, "Subnet In Two Zones", "aws.subnet_ids gives %s for both %s and %s, but a subnet lies in one zone; give each zone a subnet of its own in that zone.", id, prev, z)
		default:
			zoneOf[id] = z
		}
	}
	for _, z := range zones {
		if _, ok := v.a.SubnetIDs[z]; !ok {
			var names []string
			for _, n := range v.s.Nodes {
				if n.Zone == z {
					names = append(names, n.Name)
				}
			}
			v.add(at, "Missing Subnet", "Zone %s (node %s) has no subnet in aws.subnet_ids; add \"%s\" = \"subnet-...\", a subnet of the cluster's VPC in that zone.", z, strings.Join(names, ", "), z)
		}
	}
}

func exampleZone(region string) string {
	if awsRegionPattern.MatchString(region) {
		return region + "a"
	}
	return "eu-west-1a"
}

func zoneNames(r catalog.Region) []string {
	var out []string
	for _, z := range r.Zones {
		out = append(out, z.Name)
	}
	slices.Sort(out)
	return out
}
