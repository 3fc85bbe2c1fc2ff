package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// Lab is the lab file (-lab): see the schema at the top of main.go.
type Lab struct {
	Datacenter string `json:"datacenter"`
	Cluster    string `json:"cluster"`
	Datastore  string `json:"datastore"`
	Network    string `json:"network"`
	// optional (real-lab notes V12): a distributed switch (default name DSwitch, members:
	// distributed_switch_hosts) holding these distributed port groups, created only when there are some; and NSX
	// opaque networks (OpaqueNetwork, nsx.LogicalSwitch). See networks.go.
	DistributedSwitch     string   `json:"distributed_switch"`
	DistributedPortGroups []string `json:"distributed_port_groups"`
	// the hosts that are members of the switch (default: every lab host); a VM on another
	// host cannot use its port groups (V12, networks.go)
	DistributedSwitchHosts []string `json:"distributed_switch_hosts"`
	OpaqueNetworks         []string `json:"opaque_networks"`
	// "off" (default: a lone host or a cluster without DRS, like the seed's), or a DRS
	// automation level; with DRS on, VMs it automates are placed at power-on (drs.go, V5).
	Drs   string    `json:"drs"`
	Hosts []LabHost `json:"hosts"`
	// optional (real-lab notes V13, clones.go): VM templates, and the subnet whose DHCP server
	// leases the guests' addresses (none: no VM reports a guest IP)
	Templates []LabTemplate `json:"templates"`
	GuestDHCP string        `json:"guest_dhcp"`
	// optional (issue 19, versions.go): the vCenter release (about.version/apiVersion/build),
	// default 7.0.3; and whether the cluster is managed by a single vLCM image
	// (ComputeResource.lifecycleManaged, vSphere API 7.0)
	VcenterVersion      string `json:"vcenter_version"`
	ClusterImageManaged bool   `json:"cluster_image_managed"`
}

// MigPlacement is where a MIG-backed vGPU type's GPU instance may start (memory slices) and how
// many it takes: NVIDIA's placement rules, from miglab's catalog.
type MigPlacement struct {
	Starts []int `json:"starts"`
	Size   int   `json:"size"`
}

// LabGPU is one physical NVIDIA GPU of a host.
type LabGPU struct {
	PciID            string `json:"pci_id"`              // "0000:3b:00.0"
	DeviceID         string `json:"device_id"`           // "0x20b5"
	SubDeviceID      string `json:"subsystem_device_id"` // optional, "0x1533"
	Name             string `json:"name"`                // "NVIDIA A100 80GB PCIe"
	MemoryMB         int64  `json:"memory_mb"`           // 81920
	MigComputeSlices int    `json:"mig_compute_slices"`  // optional, 7 for an A100; 0: unchecked
	MigMemorySlices  int    `json:"mig_memory_slices"`   // optional, 8 for an A100; 0: no slot model
	// optional (real-lab notes V9): MIG mode in effect; a GPU in MIG mode offers only MIG-backed
	// types, one not in MIG mode only time-sliced ones. Unset: both (the lab does not say).
	MigMode *bool `json:"mig_mode"`

	bus, slot, function byte
	deviceID, subID     int16
}

// LabHost is one ESXi host.
type LabHost struct {
	Name               string   `json:"name"`
	Cpus               int      `json:"cpus"`         // logical CPUs (threads)
	CpuCores           int      `json:"cpu_cores"`    // optional, default cpus/2
	CpuPackages        int      `json:"cpu_packages"` // optional, default 2
	CpuMhz             int      `json:"cpu_mhz"`      // optional, default 2000
	CpuModel           string   `json:"cpu_model"`    // optional
	Vendor             string   `json:"vendor"`       // optional, "Dell Inc."
	Model              string   `json:"model"`        // optional, "PowerEdge R750xa"
	MemoryGB           int64    `json:"memory_gb"`
	GPUs               []LabGPU `json:"gpus"`
	VgpuTypes          []string `json:"vgpu_types"`
	GraphicsType       string   `json:"graphics_type"`     // "shared" (default) | "sharedDirect"
	AssignmentPolicy   string   `json:"assignment_policy"` // "performance" (default) | "consolidation"
	GraphicsApply      string   `json:"graphics_apply"`    // "reboot" (default) | "immediate"
	MaintenanceMode    bool     `json:"maintenance_mode"`
	RebootSeconds      *float64 `json:"reboot_seconds"`
	RebootNeverReturns bool     `json:"reboot_never_returns"`
	RebootHold         string   `json:"reboot_hold"` // optional: while this file exists, a reboot hangs
	// optional: the reboot link's folder. A reboot writes <dir>/<name>.down (the reboot's number)
	// and the host comes back only once <dir>/<name>.up holds that number: the stand-in has
	// booted before vCenter shows the host connected, as on a real host (vSphere API:
	// HostSystemConnectionState notResponding while it reboots; HostRuntimeInfo.bootTime set at boot).
	BootAckDir       string          `json:"boot_ack_dir"`
	Capability       map[string]bool `json:"capability"`
	VgpuCapabilities map[string]bool `json:"vgpu_capabilities"`
	// optional: vGPU type -> MIG placement rules. With them (and the GPU's mig_memory_slices) the
	// vGPU manager's choice of start slot is modelled: first fit (real-lab notes V2).
	MigPlacements map[string]MigPlacement `json:"mig_placements"`
	// optional: a folder where the host's running vGPUs are written (<dir>/<name>.json) at every
	// change, for the ESXi stand-in's nvidia-smi vgpu -q and mig -lgi.
	HostStateDir string `json:"host_state_dir"`
	// optional, default true (real-lab notes V9): the NVIDIA host driver is loaded. Without it
	// the GPUs' graphics type is basic and the host offers no vGPU type.
	DriverLoaded *bool `json:"driver_loaded"`
	// how long at most a maintenance-mode task that cannot succeed waits before its timeout
	// fault (the real task waits its whole timeout); default 3
	MaintenanceWaitCapS float64 `json:"maintenance_wait_cap_s"`
	// optional: HostConfigInfo.lockdownMode, "lockdownDisabled" (default) | "lockdownNormal" |
	// "lockdownStrict"; in lockdown root cannot log in over SSH (real-lab notes V6)
	LockdownMode string `json:"lockdown_mode"`
	// optional: TSM-SSH's policy, "off" (ESXi's default, "start and stop manually": stopped at
	// every boot) | "on" (started at boot) | "automatic"; the lab starts with SSH running, as an
	// admin who lets Ansible in leaves it (real-lab notes V6)
	SSHPolicy string `json:"ssh_policy"`
	// optional (versions.go): the ESXi release the host runs (config.product), default 7.0.3;
	// not newer than vcenter_version
	EsxiVersion string `json:"esxi_version"`
}

var (
	pciIDRe     = regexp.MustCompile(`^[0-9a-fA-F]{4}:([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$`)
	capabilityK = map[string]bool{
		"rebootSupported": true, "shutdownSupported": true, "maintenanceModeSupported": true,
		"vmotionSupported": true, "standbySupported": true,
	}
	vgpuCapK = map[string]bool{
		"diskSnapshotSupported": true, "memorySnapshotSupported": true, "suspendSupported": true,
		"migrateSupported": true,
	}
)

func parseHex16(s string) (int16, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 16)
	return int16(uint16(v)), err // vSphere's PCI ids are xsd:short: 0x8000 and up read negative
}

// loadLab reads and validates a lab file; every problem is reported, one a line.
func loadLab(path string) (*Lab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	lab := &Lab{}
	if err := dec.Decode(lab); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	var problems []string
	bad := func(format string, args ...interface{}) {
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	if lab.Datacenter == "" {
		lab.Datacenter = "dc1"
	}
	if lab.Cluster == "" {
		lab.Cluster = "cluster1"
	}
	if lab.Datastore == "" {
		lab.Datastore = "datastore1"
	}
	if lab.Network == "" {
		lab.Network = "VM Network"
	}
	if lab.Drs == "" {
		lab.Drs = "off"
	}
	if !map[string]bool{"off": true, "manual": true, "partiallyAutomated": true,
		"fullyAutomated": true}[lab.Drs] {
		bad("drs: %q is not off, manual, partiallyAutomated or fullyAutomated", lab.Drs)
	}
	if len(lab.Hosts) == 0 {
		bad("hosts: at least one host is required")
	}
	names := map[string]bool{}
	for i := range lab.Hosts {
		h := &lab.Hosts[i]
		where := fmt.Sprintf("hosts[%d]", i)
		if h.Name == "" {
			bad("%s.name: required", where)
		} else if names[h.Name] {
			bad("%s.name: %q appears twice", where, h.Name)
		}
		names[h.Name] = true
		if h.Cpus < 1 || h.Cpus > 32767 {
			bad("%s.cpus: must be 1..32767 logical CPUs", where)
		}
		if h.CpuCores == 0 {
			h.CpuCores = h.Cpus
			if h.Cpus >= 2 && h.Cpus%2 == 0 {
				h.CpuCores = h.Cpus / 2 // hyper-threading
			}
		}
		if h.CpuPackages == 0 {
			h.CpuPackages = 1
			if h.CpuCores >= 2 && h.CpuCores%2 == 0 {
				h.CpuPackages = 2
			}
		}
		if h.CpuCores < 1 || h.CpuCores > h.Cpus || h.CpuPackages < 1 || h.CpuPackages > h.CpuCores {
			bad("%s: needs 1 <= cpu_packages <= cpu_cores <= cpus", where)
		}
		if h.CpuMhz == 0 {
			h.CpuMhz = 2000
		}
		if h.CpuModel == "" {
			h.CpuModel = "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz"
		}
		if h.Vendor == "" {
			h.Vendor = "miglab"
		}
		if h.Model == "" {
			h.Model = "simulated GPU server"
		}
		if h.MemoryGB < 1 {
			bad("%s.memory_gb: must be at least 1", where)
		}
		if h.GraphicsType == "" {
			h.GraphicsType = "shared"
		}
		if !validGraphicsType(h.GraphicsType) {
			bad("%s.graphics_type: %q is not shared or sharedDirect", where, h.GraphicsType)
		}
		if h.AssignmentPolicy == "" {
			h.AssignmentPolicy = "performance"
		}
		if !validPolicy(h.AssignmentPolicy) {
			bad("%s.assignment_policy: %q is not performance or consolidation", where,
				h.AssignmentPolicy)
		}
		if h.GraphicsApply == "" {
			h.GraphicsApply = "reboot"
		}
		if h.GraphicsApply != "reboot" && h.GraphicsApply != "immediate" {
			bad("%s.graphics_apply: %q is not reboot or immediate", where, h.GraphicsApply)
		}
		if h.MaintenanceWaitCapS == 0 {
			h.MaintenanceWaitCapS = 3
		}
		if h.MaintenanceWaitCapS < 0 {
			bad("%s.maintenance_wait_cap_s: must not be negative", where)
		}
		if h.LockdownMode == "" {
			h.LockdownMode = "lockdownDisabled"
		}
		switch h.LockdownMode {
		case "lockdownDisabled", "lockdownNormal", "lockdownStrict":
		default:
			bad("%s.lockdown_mode: %q is not lockdownDisabled, lockdownNormal or lockdownStrict",
				where, h.LockdownMode)
		}
		if h.SSHPolicy == "" {
			h.SSHPolicy = "off"
		}
		if h.SSHPolicy != "off" && h.SSHPolicy != "on" && h.SSHPolicy != "automatic" {
			bad("%s.ssh_policy: %q is not off, on or automatic", where, h.SSHPolicy)
		}
		if h.RebootSeconds != nil && *h.RebootSeconds < 0 {
			bad("%s.reboot_seconds: must not be negative", where)
		}
		for k := range h.Capability {
			if !capabilityK[k] {
				bad("%s.capability.%s: unknown (known: rebootSupported, shutdownSupported, "+
					"maintenanceModeSupported, vmotionSupported, standbySupported)", where, k)
			}
		}
		for k := range h.VgpuCapabilities {
			if !vgpuCapK[k] {
				bad("%s.vgpu_capabilities.%s: unknown (known: diskSnapshotSupported, "+
					"memorySnapshotSupported, suspendSupported, migrateSupported)", where, k)
			}
		}
		for t, pl := range h.MigPlacements {
			if pl.Size < 1 || len(pl.Starts) == 0 {
				bad("%s.mig_placements.%s: needs starts and a size of at least 1", where, t)
			}
			for _, st := range pl.Starts {
				if st < 0 {
					bad("%s.mig_placements.%s: start %d is negative", where, t, st)
				}
			}
		}
		pci := map[string]bool{}
		for j := range h.GPUs {
			g := &h.GPUs[j]
			gw := fmt.Sprintf("%s.gpus[%d]", where, j)
			m := pciIDRe.FindStringSubmatch(g.PciID)
			if m == nil {
				bad("%s.pci_id: %q is not DDDD:BB:SS.F", gw, g.PciID)
			} else {
				g.PciID = strings.ToLower(g.PciID)
				b, _ := strconv.ParseUint(m[1], 16, 8)
				s, _ := strconv.ParseUint(m[2], 16, 8)
				f, _ := strconv.ParseUint(m[3], 16, 8)
				g.bus, g.slot, g.function = byte(b), byte(s), byte(f)
				if pci[g.PciID] {
					bad("%s.pci_id: %q appears twice", gw, g.PciID)
				}
				pci[g.PciID] = true
			}
			var err error
			if g.deviceID, err = parseHex16(g.DeviceID); err != nil || g.DeviceID == "" {
				bad("%s.device_id: %q is not a 16-bit hex id", gw, g.DeviceID)
			}
			if g.SubDeviceID != "" {
				if g.subID, err = parseHex16(g.SubDeviceID); err != nil {
					bad("%s.subsystem_device_id: %q is not a 16-bit hex id", gw, g.SubDeviceID)
				}
			}
			if g.Name == "" {
				bad("%s.name: required", gw)
			}
			if g.MemoryMB < 1 {
				bad("%s.memory_mb: must be at least 1", gw)
			}
			if g.MigMemorySlices < 0 || g.MigMemorySlices > 64 {
				bad("%s.mig_memory_slices: must be 0..64", gw)
			}
		}
		// A host may carry GPUs of several models (their types' rules all in mig_placements): a
		// rule must fit the largest GPU; on a smaller one first fit skips starts beyond its end.
		maxSlices := 0
		for _, g := range h.GPUs {
			if g.MigMemorySlices > maxSlices {
				maxSlices = g.MigMemorySlices
			}
		}
		for t, pl := range h.MigPlacements {
			for _, st := range pl.Starts {
				if maxSlices > 0 && st+pl.Size > maxSlices {
					bad("%s.mig_placements.%s: start %d + size %d exceeds the %d memory slices "+
						"of its GPUs", where, t, st, pl.Size, maxSlices)
				}
			}
		}
	}
	checkVersions(lab, bad)
	checkGuests(lab, bad)
	problems = append(problems, checkNetworks(lab)...)
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s:\n  %s", path, strings.Join(problems, "\n  "))
	}
	return lab, nil
}

func validGraphicsType(t string) bool { return t == "shared" || t == "sharedDirect" }

func validPolicy(p string) bool { return p == "performance" || p == "consolidation" }

var (
	migTypeRe = regexp.MustCompile(`-(\d+)-(\d+)c(me)?$`) // grid_a100d-2-20c: 2 slices, 20 GB
	tsTypeRe  = regexp.MustCompile(`-(\d+)c$`)            // grid_a100d-20c: 20 GB
)

// vgpuShape is what the simulator reads from a vGPU type's name: MIG-backed or time-sliced, its
// compute slices (MIG) and framebuffer in GB (0 when the name says nothing).
func vgpuShape(vgpu string) (mig bool, slices int, fbGB int) {
	name := strings.ToLower(vgpu)
	if m := migTypeRe.FindStringSubmatch(name); m != nil {
		slices, _ = strconv.Atoi(m[1])
		fbGB, _ = strconv.Atoi(m[2])
		return true, slices, fbGB
	}
	if m := tsTypeRe.FindStringSubmatch(name); m != nil {
		fbGB, _ = strconv.Atoi(m[1])
	}
	return false, 0, fbGB
}
