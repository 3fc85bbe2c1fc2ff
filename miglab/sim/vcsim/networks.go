package main

// Networks beyond the datacenter's standard "VM Network": a distributed switch (vDS) with
// distributed port groups and NSX opaque networks (lab keys distributed_switch,
// distributed_port_groups, opaque_networks), and the check that a VM's NIC backing fits the kind
// of network it names (real-lab notes V12).

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// checkNetworks validates the lab's network keys (defaults set here).
func checkNetworks(lab *Lab) []string {
	var problems []string
	if lab.DistributedSwitch == "" {
		lab.DistributedSwitch = "DSwitch"
	}
	seen := map[string]bool{}
	for i, n := range lab.DistributedPortGroups {
		switch {
		case n == "":
			problems = append(problems, fmt.Sprintf("distributed_port_groups[%d]: empty name", i))
		case seen[n]:
			// vCenter refuses a second port group of one name on a switch (DuplicateName)
			problems = append(problems, fmt.Sprintf("distributed_port_groups[%d]: %q appears twice", i, n))
		}
		seen[n] = true
	}
	hostNames := map[string]bool{}
	for _, h := range lab.Hosts {
		hostNames[h.Name] = true
	}
	for i, n := range lab.DistributedSwitchHosts {
		if !hostNames[n] {
			problems = append(problems, fmt.Sprintf("distributed_switch_hosts[%d]: %q is not a lab host", i, n))
		}
	}
	for i, n := range lab.OpaqueNetworks {
		if n == "" {
			problems = append(problems, fmt.Sprintf("opaque_networks[%d]: empty name", i))
		}
	}
	return problems
}

// buildNetworks creates the lab's distributed switch (every lab host a member) with its port
// groups, and its NSX opaque networks. A distributed port group may share its name with the
// standard network: vCenter allows it (the names live in different switches), and it is the case
// miglab must refuse as ambiguous.
func buildNetworks(ctx context.Context, c *vim25.Client, lab *Lab, folders *object.DatacenterFolders,
	hosts []types.ManagedObjectReference) error {
	netFolder := simulator.Map.Get(folders.NetworkFolder.Reference()).(*simulator.Folder)
	if len(lab.DistributedPortGroups) > 0 {
		spec := types.DVSCreateSpec{ConfigSpec: &types.VMwareDVSConfigSpec{
			DVSConfigSpec: types.DVSConfigSpec{Name: lab.DistributedSwitch},
		}}
		task, err := folders.NetworkFolder.CreateDVS(ctx, spec)
		if err != nil {
			return fmt.Errorf("distributed switch: %v", err)
		}
		info, err := task.WaitForResult(ctx, nil)
		if err != nil {
			return fmt.Errorf("distributed switch: %v", err)
		}
		dvsRef := info.Result.(types.ManagedObjectReference)
		dvs := object.NewDistributedVirtualSwitch(c, dvsRef)
		members := &types.DVSConfigSpec{}
		for _, h := range dvsMembers(lab, hosts) {
			members.Host = append(members.Host, types.DistributedVirtualSwitchHostMemberConfigSpec{
				Operation: string(types.ConfigSpecOperationAdd), Host: h,
			})
		}
		if task, err = dvs.Reconfigure(ctx, members); err == nil {
			err = task.Wait(ctx)
		}
		if err != nil {
			return fmt.Errorf("distributed switch hosts: %v", err)
		}
		sw := simulator.Map.Get(dvsRef).(*simulator.DistributedVirtualSwitch)
		for i, name := range lab.DistributedPortGroups {
			// The stock AddDVPortgroup refuses any name already in the network folder; add
			// under a unique name, then give the port group its own.
			tmp := fmt.Sprintf("miglab-dvpg-%d", i)
			task, err := dvs.AddPortgroup(ctx, []types.DVPortgroupConfigSpec{{
				Name: tmp, Type: string(types.DistributedVirtualPortgroupPortgroupTypeEarlyBinding),
				NumPorts: 8, AutoExpand: types.NewBool(true),
			}})
			if err == nil {
				err = task.Wait(ctx)
			}
			if err != nil {
				return fmt.Errorf("distributed port group %s: %v", name, err)
			}
			pg := simulator.Map.FindByName(tmp, netFolder.ChildEntity).(*simulator.DistributedVirtualPortgroup)
			pg.Name, pg.Config.Name, pg.Entity().Name = name, name, name
			pg.Summary.GetNetworkSummary().Name = name
			for j, n := range sw.Summary.PortgroupName {
				if n == tmp {
					sw.Summary.PortgroupName[j] = name
				}
			}
		}
	}
	dc := simulator.Map.Get(netFolder.Parent.Reference()).(*simulator.Datacenter)
	for _, name := range lab.OpaqueNetworks {
		// NSX-T segments on an N-VDS: vCenter shows them as OpaqueNetwork (type
		// nsx.LogicalSwitch); the id is stable per name here, a UUID as NSX's are.
		summary := types.OpaqueNetworkSummary{
			NetworkSummary:    types.NetworkSummary{Name: name},
			OpaqueNetworkId:   uuid.NewSHA1(uuid.NameSpaceOID, []byte("nsx:"+name)).String(),
			OpaqueNetworkType: "nsx.LogicalSwitch",
		}
		if err := netFolder.AddOpaqueNetwork(summary); err != nil {
			return fmt.Errorf("opaque network %s: %v", name, err)
		}
		// The stock folder does not list opaque networks in the datacenter's and the hosts'
		// network; vCenter does (Datacenter.network, HostSystem.network).
		for _, ref := range netFolder.ChildEntity {
			if n, ok := simulator.Map.Get(ref).(*mo.OpaqueNetwork); ok && n.Name == name {
				dc.Network = append(dc.Network, ref)
				for _, h := range hosts {
					hs := simulator.Map.Get(h).(*simulator.HostSystem)
					hs.Network = append(hs.Network, ref)
				}
			}
		}
	}
	return nil
}

// dvsMembers are the hosts that join the lab's distributed switch: distributed_switch_hosts
// when given, else every lab host.
func dvsMembers(lab *Lab, hosts []types.ManagedObjectReference) []types.ManagedObjectReference {
	if len(lab.DistributedSwitchHosts) == 0 {
		return hosts
	}
	want := map[string]bool{}
	for _, n := range lab.DistributedSwitchHosts {
		want[n] = true
	}
	var out []types.ManagedObjectReference
	for _, h := range hosts {
		if hs, ok := simulator.Map.Get(h).(*simulator.HostSystem); ok && want[hs.Name] {
			out = append(out, h)
		}
	}
	return out
}

// datacenterOf is the datacenter above an inventory object.
func datacenterOf(ref types.ManagedObjectReference) *simulator.Datacenter {
	for i := 0; i < 64; i++ {
		obj := simulator.Map.Get(ref)
		if dc, ok := obj.(*simulator.Datacenter); ok {
			return dc
		}
		e, ok := obj.(mo.Entity)
		if !ok || e.Entity().Parent == nil {
			return nil
		}
		ref = *e.Entity().Parent
	}
	return nil
}

// nicBackingCheck refuses (a failed task, InvalidDeviceSpec) a CreateVM_Task or ReconfigVM_Task
// whose added or edited NIC has a backing that does not fit the network it names. vSphere API
// (real-lab notes V12): VirtualEthernetCardNetworkBackingInfo is for standard port groups only;
// a distributed (vDS, NSX on VDS) port group needs a DistributedVirtualPortBackingInfo (the
// switch's uuid and the port group's key), an NSX opaque network an OpaqueNetworkBackingInfo.
// vCenter answers a standard backing naming a distributed port group with "Invalid configuration
// for device" (operators also report the NIC left disconnected; the simulator refuses, so the
// mistake cannot pass unnoticed). The stock simulator accepted any name, connecting the NIC to
// whichever network of that name it found first. nil: nothing to refuse.
//
// host: the VM's host, when known. A distributed port group serves only the switch's member
// hosts (vSphere Networking: "To manage the networking of your vSphere environment by using a
// vSphere Distributed Switch, you must associate hosts with the switch"); a NIC on one from a
// host outside it is refused the same way (the wording of that refusal is an assumption).
func nicBackingCheck(obj mo.Reference, method string, dcRef types.ManagedObjectReference,
	host *types.ManagedObjectReference, changes []types.BaseVirtualDeviceConfigSpec) soap.HasFault {
	dc := datacenterOf(dcRef)
	if dc == nil {
		return nil
	}
	for i, c := range changes {
		spec := c.GetVirtualDeviceConfigSpec()
		if spec.Operation == types.VirtualDeviceConfigSpecOperationRemove || spec.Device == nil {
			continue
		}
		nic, ok := spec.Device.(types.BaseVirtualEthernetCard)
		if !ok {
			continue
		}
		why := nicBackingProblem(dc, host, nic.GetVirtualEthernetCard().Backing)
		if why == "" {
			continue
		}
		fault := &types.InvalidDeviceSpec{DeviceIndex: int32(i)}
		fault.Property = "virtualDeviceSpec.device.backing"
		return failedTaskDetail(obj, method, fault,
			fmt.Sprintf("Invalid configuration for device '%d'.", i), "network adapter: "+why)
	}
	return nil
}

// nicBackingProblem says why a NIC backing does not fit the datacenter's networks ("" if it does).
func nicBackingProblem(dc *simulator.Datacenter, host *types.ManagedObjectReference,
	backing types.BaseVirtualDeviceBackingInfo) string {
	nets := map[string][]mo.Reference{}
	var all []mo.Reference
	for _, ref := range dc.Network {
		if obj := simulator.Map.Get(ref); obj != nil {
			all = append(all, obj)
			nets[netName(obj)] = append(nets[netName(obj)], obj)
		}
	}
	switch b := backing.(type) {
	case *types.VirtualEthernetCardNetworkBackingInfo:
		var named []mo.Reference
		if b.Network != nil {
			if obj := simulator.Map.Get(*b.Network); obj != nil {
				named = []mo.Reference{obj}
			}
		} else {
			named = nets[b.DeviceName]
		}
		for _, obj := range named {
			if _, ok := obj.(*mo.Network); ok {
				return "" // a standard port group
			}
		}
		for _, obj := range named {
			switch n := obj.(type) {
			case *simulator.DistributedVirtualPortgroup:
				return fmt.Sprintf("%q is a distributed port group (key %s): it needs a "+
					"DistributedVirtualPortBackingInfo (switch uuid and port group key); "+
					"NetworkBackingInfo is for standard port groups only", n.Name, n.Key)
			case *mo.OpaqueNetwork:
				return fmt.Sprintf("%q is an NSX opaque network: it needs an "+
					"OpaqueNetworkBackingInfo; NetworkBackingInfo is for standard port groups "+
					"only", n.Name)
			}
		}
		return fmt.Sprintf("no standard port group %q in datacenter %s", b.DeviceName, dc.Name)
	case *types.VirtualEthernetCardDistributedVirtualPortBackingInfo:
		for _, obj := range all {
			if pg, ok := obj.(*simulator.DistributedVirtualPortgroup); ok &&
				pg.Key == b.Port.PortgroupKey {
				sw, _ := simulator.Map.Get(*pg.Config.DistributedVirtualSwitch).(*simulator.DistributedVirtualSwitch)
				if sw == nil || sw.Uuid != b.Port.SwitchUuid {
					return fmt.Sprintf("port group %s is not on switch %s", pg.Key, b.Port.SwitchUuid)
				}
				if host != nil && simulator.FindReference(pg.Host, *host) == nil {
					name := host.Value
					if hs, ok := simulator.Map.Get(*host).(*simulator.HostSystem); ok {
						name = hs.Name
					}
					return fmt.Sprintf("host %s is not a member of distributed switch %s, so "+
						"port group %q is not available to it", name, sw.Name, pg.Name)
				}
				return ""
			}
		}
		return fmt.Sprintf("no distributed port group with key %q", b.Port.PortgroupKey)
	case *types.VirtualEthernetCardOpaqueNetworkBackingInfo:
		for _, obj := range all {
			if n, ok := obj.(*mo.OpaqueNetwork); ok {
				if s, ok := n.Summary.(*types.OpaqueNetworkSummary); ok &&
					s.OpaqueNetworkId == b.OpaqueNetworkId && s.OpaqueNetworkType == b.OpaqueNetworkType {
					return ""
				}
			}
		}
		return fmt.Sprintf("no opaque network %s of type %s", b.OpaqueNetworkId, b.OpaqueNetworkType)
	}
	return ""
}

// netName is a network's name (these types carry their own name field).
func netName(obj mo.Reference) string {
	switch n := obj.(type) {
	case *mo.Network:
		return n.Name
	case *mo.OpaqueNetwork:
		return n.Name
	case *simulator.DistributedVirtualPortgroup:
		return n.Name
	}
	return ""
}

// fixNICNetworks lists an NSX opaque network a NIC is on in the VM's network property, as
// vCenter does; the stock simulator lists an empty reference there, which clients cannot read.
func fixNICNetworks(vm *simulator.VirtualMachine) {
	if vm.Config == nil {
		return
	}
	dc := datacenterOf(vm.Self)
	if dc == nil {
		return
	}
	var nets []types.ManagedObjectReference
	for _, ref := range vm.Network {
		if ref.Type != "" {
			nets = append(nets, ref)
		}
	}
	for _, d := range vm.Config.Hardware.Device {
		nic, ok := d.(types.BaseVirtualEthernetCard)
		if !ok {
			continue
		}
		b, ok := nic.GetVirtualEthernetCard().Backing.(*types.VirtualEthernetCardOpaqueNetworkBackingInfo)
		if !ok {
			continue
		}
		for _, ref := range dc.Network {
			n, ok := simulator.Map.Get(ref).(*mo.OpaqueNetwork)
			if !ok {
				continue
			}
			if s, ok := n.Summary.(*types.OpaqueNetworkSummary); ok &&
				s.OpaqueNetworkId == b.OpaqueNetworkId && simulator.FindReference(nets, ref) == nil {
				nets = append(nets, ref)
			}
		}
	}
	vm.Network = nets
}
