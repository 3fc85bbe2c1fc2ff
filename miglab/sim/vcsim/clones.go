package main

// Templates, clones and the guests' DHCP addresses (real-lab notes V13).
//
// What vSphere does, and what this file models:
//   - CloneVM_Task copies the source VM's configuration, its firmware (config.firmware, EFI
//     secure boot) included, and its disks (vSphere API VirtualMachine.CloneVM_Task; the stock
//     govmomi clone starts from a new VM's defaults, BIOS, which real vCenter never does).
//   - The guest OS on the copied disk keeps the template's /etc/machine-id unless the template
//     was sealed with an empty one (systemd then makes a new one at first boot). systemd-networkd
//     derives its DHCP client identifier (DUID) from the machine-id, so clones that are not
//     customized get one DHCP lease: the same guest IP (VMware KB 82229; systemd issue #9609).
//     A new cloud-init instance-id does not reset the machine-id (cloud-init issue #4066, "won't
//     fix"); it sets the hostname (local-hostname) and new SSH host keys.
//   - A guest installed for BIOS does not boot under EFI, nor one installed for EFI under BIOS
//     (the firmware finds no boot loader): the power-on succeeds, VMware Tools never start, and
//     vCenter shows no guest IP.
//
// Lab keys: "templates" (VMs marked as templates at start, their firmware and the machine-id of
// their guest) and "guest_dhcp" (a subnet; without it no VM reports a guest IP, as before).

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"sync"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// LabTemplate is a VM template of the lab (a "golden image").
type LabTemplate struct {
	Name      string `json:"name"`       // required, unique
	Host      string `json:"host"`       // optional, default the first host
	Firmware  string `json:"firmware"`   // "efi" (default) | "bios": what its guest was installed for
	GuestID   string `json:"guest_id"`   // default ubuntu64Guest
	MachineID string `json:"machine_id"` // its guest's /etc/machine-id; "": sealed (empty)
	HostName  string `json:"host_name"`  // its guest's hostname, default the template's name
	DiskGB    int64  `json:"disk_gb"`    // default 16
}

// guestDisk is what a VM's guest OS carries on its disk: copied by a clone.
type guestDisk struct {
	machineID string // "": sealed, the first boot makes one (then kept)
	firmware  string // installed for; "": unknown, boots under either
	hostName  string
}

var (
	gmu       sync.Mutex
	disks     = map[string]*guestDisk{} // VM moref value -> its guest's disk
	leases    = map[string]net.IP{}     // DHCP client identifier (machine-id) -> address
	dhcpNet   *net.IPNet                // lab's guest_dhcp; nil: no guest IPs
	nextLease uint32                    // host part of the next new lease
)

// checkGuests validates the lab's templates and guest_dhcp (called from loadLab).
func checkGuests(lab *Lab, bad func(string, ...interface{})) {
	hosts := map[string]bool{}
	for _, h := range lab.Hosts {
		hosts[h.Name] = true
	}
	seen := map[string]bool{}
	for i := range lab.Templates {
		t := &lab.Templates[i]
		where := fmt.Sprintf("templates[%d]", i)
		if t.Name == "" {
			bad("%s.name: required", where)
		} else if seen[t.Name] {
			bad("%s.name: %q appears twice", where, t.Name)
		}
		seen[t.Name] = true
		if t.Host != "" && !hosts[t.Host] {
			bad("%s.host: %q is not a host of the lab", where, t.Host)
		}
		if t.Firmware == "" {
			t.Firmware = "efi"
		}
		if t.Firmware != "efi" && t.Firmware != "bios" {
			bad("%s.firmware: %q is not efi or bios", where, t.Firmware)
		}
		if t.GuestID == "" {
			t.GuestID = "ubuntu64Guest"
		}
		if t.HostName == "" {
			t.HostName = t.Name
		}
		if t.DiskGB == 0 {
			t.DiskGB = 16
		}
		if t.DiskGB < 1 {
			bad("%s.disk_gb: must be at least 1", where)
		}
	}
	if lab.GuestDHCP != "" {
		_, n, err := net.ParseCIDR(lab.GuestDHCP)
		if err != nil || n.IP.To4() == nil {
			bad("guest_dhcp: %q is not an IPv4 subnet (192.0.2.0/24)", lab.GuestDHCP)
		} else if ones, _ := n.Mask.Size(); ones > 28 {
			bad("guest_dhcp: %q is too small (at most /28)", lab.GuestDHCP)
		} else {
			dhcpNet = n
		}
	}
}

// createTemplates makes the lab's templates: a VM with a disk and a vmxnet3 NIC on the lab's
// network, marked as a template.
func createTemplates(ctx context.Context, c *vim25.Client, lab *Lab, folders *object.DatacenterFolders,
	pool *object.ResourcePool, hostRefs []types.ManagedObjectReference,
	network types.ManagedObjectReference) error {
	for _, t := range lab.Templates {
		host := hostRefs[0]
		for i, h := range lab.Hosts {
			if h.Name == t.Host {
				host = hostRefs[i]
			}
		}
		spec := types.VirtualMachineConfigSpec{
			Name: t.Name, GuestId: t.GuestID, Firmware: t.Firmware, NumCPUs: 2, MemoryMB: 4096,
			Files: &types.VirtualMachineFileInfo{VmPathName: "[" + lab.Datastore + "]"},
			DeviceChange: []types.BaseVirtualDeviceConfigSpec{
				&types.VirtualDeviceConfigSpec{
					Operation: types.VirtualDeviceConfigSpecOperationAdd,
					Device: &types.ParaVirtualSCSIController{VirtualSCSIController: types.VirtualSCSIController{
						VirtualController: types.VirtualController{VirtualDevice: types.VirtualDevice{Key: -10}},
						SharedBus:         types.VirtualSCSISharingNoSharing,
					}},
				},
				&types.VirtualDeviceConfigSpec{
					Operation:     types.VirtualDeviceConfigSpecOperationAdd,
					FileOperation: types.VirtualDeviceConfigSpecFileOperationCreate,
					Device: &types.VirtualDisk{
						VirtualDevice: types.VirtualDevice{
							Key: -11, ControllerKey: -10, UnitNumber: types.NewInt32(0),
							Backing: &types.VirtualDiskFlatVer2BackingInfo{
								DiskMode: "persistent", ThinProvisioned: types.NewBool(true),
							},
						},
						CapacityInKB: t.DiskGB * 1024 * 1024,
					},
				},
				&types.VirtualDeviceConfigSpec{
					Operation: types.VirtualDeviceConfigSpecOperationAdd,
					Device: &types.VirtualVmxnet3{VirtualVmxnet: types.VirtualVmxnet{
						VirtualEthernetCard: types.VirtualEthernetCard{VirtualDevice: types.VirtualDevice{
							Key: -12,
							Backing: &types.VirtualEthernetCardNetworkBackingInfo{
								VirtualDeviceDeviceBackingInfo: types.VirtualDeviceDeviceBackingInfo{
									DeviceName: lab.Network,
								},
								Network: &network,
							},
						}},
					}},
				},
			},
		}
		hostObj := object.NewHostSystem(c, host)
		task, err := folders.VmFolder.CreateVM(ctx, spec, pool, hostObj)
		if err != nil {
			return fmt.Errorf("template %s: %v", t.Name, err)
		}
		info, err := task.WaitForResult(ctx, nil)
		if err != nil {
			return fmt.Errorf("template %s: %v", t.Name, err)
		}
		ref := info.Result.(types.ManagedObjectReference)
		if err := object.NewVirtualMachine(c, ref).MarkAsTemplate(ctx); err != nil {
			return fmt.Errorf("template %s: %v", t.Name, err)
		}
		disks[ref.Value] = &guestDisk{machineID: t.MachineID, firmware: t.Firmware, hostName: t.HostName}
	}
	return nil
}

// diskOf is a VM's guest disk; a VM not cloned from a template has its own identity.
func diskOf(vm *simulator.VirtualMachine) *guestDisk {
	d := disks[vm.Self.Value]
	if d == nil {
		d = &guestDisk{machineID: "own-" + vm.Self.Value, hostName: vm.Name}
		disks[vm.Self.Value] = d
	}
	return d
}

// cloneDone gives a finished clone its source's firmware and a copy of its source's guest disk.
func cloneDone(src, clone *simulator.VirtualMachine) {
	gmu.Lock()
	d := *diskOf(src)
	disks[clone.Self.Value] = &d
	gmu.Unlock()
	simulator.Map.WithLock(clone, func() {
		clone.Config.Firmware = src.Config.Firmware
		changes := []types.PropertyChange{{Name: "config.firmware", Val: src.Config.Firmware}}
		if src.Config.BootOptions != nil {
			opts := *src.Config.BootOptions
			clone.Config.BootOptions = &opts
			changes = append(changes, types.PropertyChange{Name: "config.bootOptions", Val: &opts})
		}
		simulator.Map.Update(clone, changes)
	})
}

// metadataHostName is cloud-init's local-hostname from the VM's guestinfo.metadata (VMware
// datasource: JSON or YAML, guestinfo.metadata.encoding base64 or none); "" when none. Only
// JSON is read here (miglab writes JSON).
func metadataHostName(vm *simulator.VirtualMachine) string {
	var data, enc string
	for _, o := range vm.Config.ExtraConfig {
		v := o.GetOptionValue()
		s, _ := v.Value.(string)
		switch v.Key {
		case "guestinfo.metadata":
			data = s
		case "guestinfo.metadata.encoding":
			enc = s
		}
	}
	if enc == "base64" || enc == "b64" {
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return ""
		}
		data = string(b)
	}
	var md map[string]interface{}
	if json.Unmarshal([]byte(data), &md) != nil {
		return ""
	}
	name, _ := md["local-hostname"].(string)
	return name
}

// lease is the DHCP server's answer to a client identifier: the same address every time.
func lease(clientID string) net.IP {
	if ip, ok := leases[clientID]; ok {
		return ip
	}
	nextLease++
	base := binary.BigEndian.Uint32(dhcpNet.IP.To4())
	ip := make(net.IP, 4)
	binary.BigEndian.PutUint32(ip, base+9+nextLease) // .10, .11, ...
	leases[clientID] = ip
	return ip
}

// guestBoot: a powered-on VM's guest boots (or not) and VMware Tools report its address.
func guestBoot(vm *simulator.VirtualMachine) {
	if dhcpNet == nil || vm.Guest == nil {
		return
	}
	simulator.Map.WithLock(vm, func() {
		if vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn {
			return
		}
		gmu.Lock()
		d := diskOf(vm)
		boots := d.firmware == "" || d.firmware == vm.Config.Firmware
		var ip, name string
		if boots {
			if d.machineID == "" { // a sealed template's clone: its first boot makes its own
				d.machineID = "boot-" + vm.Self.Value
			}
			if len(vm.Guest.Net) > 0 {
				ip = lease(d.machineID).String()
			}
			name = d.hostName
			if n := metadataHostName(vm); n != "" {
				name = n // cloud-init's set_hostname
			}
		}
		gmu.Unlock()
		setGuest(vm, boots, ip, name)
	})
}

// guestDown: the guest is off; vCenter shows no address.
func guestDown(vm *simulator.VirtualMachine) {
	if dhcpNet == nil || vm.Guest == nil {
		return
	}
	simulator.Map.WithLock(vm, func() {
		if vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOn {
			setGuest(vm, false, "", "")
		}
	})
}

func setGuest(vm *simulator.VirtualMachine, running bool, ip, name string) {
	tools, state := "guestToolsNotRunning", "notRunning"
	if running {
		tools, state = "guestToolsRunning", "running"
	}
	vm.Guest.ToolsRunningStatus, vm.Guest.GuestState = tools, state
	vm.Guest.IpAddress, vm.Guest.HostName = ip, name
	var addrs []string
	if ip != "" {
		addrs = []string{ip}
	}
	if len(vm.Guest.Net) > 0 {
		vm.Guest.Net[0].IpAddress = addrs
	}
	changes := []types.PropertyChange{
		{Name: "guest.toolsRunningStatus", Val: tools},
		{Name: "guest.guestState", Val: state},
		{Name: "guest.ipAddress", Val: ip},
		{Name: "guest.hostName", Val: name},
		{Name: "guest.net", Val: vm.Guest.Net},
	}
	if vm.Summary.Guest != nil {
		vm.Summary.Guest.IpAddress, vm.Summary.Guest.HostName = ip, name
		vm.Summary.Guest.ToolsRunningStatus = tools
		changes = append(changes,
			types.PropertyChange{Name: "summary.guest.ipAddress", Val: ip},
			types.PropertyChange{Name: "summary.guest.hostName", Val: name})
	}
	simulator.Map.Update(vm, changes)
}

// guestDone follows up on finished VM calls for this model (from done in hooks.go).
func guestDone(method string, this mo.Reference, req interface{}, res soap.HasFault) {
	src, ok := this.(*simulator.VirtualMachine)
	if !ok {
		return
	}
	switch method {
	case "CloneVM_Task":
		if clone := taskResultVM(method, this, res); clone != nil {
			cloneDone(src, clone)
		}
	case "PowerOnVM_Task":
		guestBoot(src)
	case "PowerOffVM_Task", "ShutdownGuest", "SuspendVM_Task":
		guestDown(src)
	}
}
