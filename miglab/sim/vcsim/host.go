package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

const (
	nvidiaVendorID   = 0x10de
	nvidiaVendorName = "NVIDIA Corporation"
	classID3D        = 0x0302 // PCI class "3D controller", as data-centre GPUs report
)

// gpuUse is one vGPU of a powered-on VM placed on a physical GPU.
type gpuUse struct {
	vm      types.ManagedObjectReference
	vgpu    string
	pending bool // placed by PowerOnVM_Task's check, the power-on itself not finished yet
	start   int  // MIG start slot the vGPU manager picked; -1: time-sliced or no slot model
	size    int  // memory slices of the GPU instance; -1 likewise
	gi      int  // GPU instance id; -1 likewise
}

// vgpuReq is one vGPU device of a VM at power-on: its type and the GPU it is pinned to, if any
// (pciPassthru<N>.cfg.gpu-pci-id, real-lab notes V3: reported by operators, unconfirmed).
type vgpuReq struct {
	vgpu string
	pin  string
}

type gpuState struct {
	LabGPU
	active          string // active graphics type: "shared" or "sharedDirect"
	passthruEnabled bool   // configured
	passthruActive  bool   // in effect (since the last reboot, or applyNow)
	uses            []gpuUse
}

// hostState is the GPU side of one simulated host. Lock order: a simulator object's lock (held
// while its method runs) first, then mu; never take an object lock while holding mu.
type hostState struct {
	lab           *LabHost
	host          *simulator.HostSystem
	gm            *GraphicsManager
	pt            *PciPassthruSystem
	ss            *ServiceSystem
	gpus          []*gpuState
	config        types.HostGraphicsConfig // configured; in effect after a reboot
	rebootSeconds float64
	gen           int // counts reboots, so a stale reboot timer does nothing
}

var (
	mu     sync.Mutex
	states = map[types.ManagedObjectReference]*hostState{} // by HostSystem
)

func stateOf(ref types.ManagedObjectReference) *hostState {
	mu.Lock()
	defer mu.Unlock()
	return states[ref]
}

// GraphicsManager is the host's HostGraphicsManager (configManager.graphicsManager).
type GraphicsManager struct {
	mo.HostGraphicsManager

	hs *hostState
}

// PciPassthruSystem is the host's HostPciPassthruSystem (configManager.pciPassthruSystem).
type PciPassthruSystem struct {
	mo.HostPciPassthruSystem

	hs   *hostState
	base []types.BaseHostPciPassthruInfo // the stock devices' entries
}

// ServiceSystem is the host's HostServiceSystem (configManager.serviceSystem): a few services;
// restarting xorg puts the configured graphics types in effect on GPUs no VM uses, as on ESXi.
type ServiceSystem struct {
	mo.HostServiceSystem

	hs *hostState
}

// setupHost turns a stock simulated host into the lab's GPU server.
func setupHost(h *simulator.HostSystem, lh *LabHost, rebootSeconds float64) *hostState {
	hs := &hostState{lab: lh, host: h, rebootSeconds: rebootSeconds}
	if lh.RebootSeconds != nil {
		hs.rebootSeconds = *lh.RebootSeconds
	}
	hs.config = types.HostGraphicsConfig{
		HostDefaultGraphicsType:        lh.GraphicsType,
		SharedPassthruAssignmentPolicy: lh.AssignmentPolicy,
	}
	for _, g := range lh.GPUs {
		hs.gpus = append(hs.gpus, &gpuState{LabGPU: g, active: lh.GraphicsType})
	}

	// CPU, memory, identity.
	hz := int64(lh.CpuMhz) * 1000 * 1000
	hw := h.Hardware // NewHostSystem gave each host its own copy; its slices are shared
	hw.CpuInfo = types.HostCpuInfo{
		NumCpuPackages: int16(lh.CpuPackages),
		NumCpuCores:    int16(lh.CpuCores),
		NumCpuThreads:  int16(lh.Cpus),
		Hz:             hz,
	}
	var features []types.HostCpuIdInfo
	if len(hw.CpuPkg) > 0 {
		features = hw.CpuPkg[0].CpuFeature
	}
	hw.CpuPkg = nil
	perPkg := lh.Cpus / lh.CpuPackages
	for p := 0; p < lh.CpuPackages; p++ {
		var threads []int16
		for t := p * perPkg; t < (p+1)*perPkg; t++ {
			threads = append(threads, int16(t))
		}
		hw.CpuPkg = append(hw.CpuPkg, types.HostCpuPackage{
			Index: int16(p), Vendor: "intel", Hz: hz, BusHz: 100000000,
			Description: lh.CpuModel, ThreadId: threads, CpuFeature: features,
		})
	}
	hw.MemorySize = lh.MemoryGB << 30
	hw.SystemInfo.Vendor = lh.Vendor
	hw.SystemInfo.Model = lh.Model
	pci := append([]types.HostPciDevice(nil), hw.PciDevice...)
	for _, g := range lh.GPUs {
		pci = append(pci, types.HostPciDevice{
			Id: g.PciID, ClassId: classID3D, Bus: g.bus, Slot: g.slot, Function: g.function,
			VendorId: nvidiaVendorID, SubVendorId: nvidiaVendorID, VendorName: nvidiaVendorName,
			DeviceId: g.deviceID, SubDeviceId: g.subID, DeviceName: g.Name,
		})
	}
	hw.PciDevice = pci

	sum := h.Summary.Hardware
	sum.Vendor, sum.Model, sum.CpuModel = lh.Vendor, lh.Model, lh.CpuModel
	sum.CpuMhz = int32(lh.CpuMhz)
	sum.NumCpuPkgs = int16(lh.CpuPackages)
	sum.NumCpuCores = int16(lh.CpuCores)
	sum.NumCpuThreads = int16(lh.Cpus)
	sum.MemorySize = hw.MemorySize

	product := h.Config.Product
	rel := esxiReleases[lh.EsxiVersion] // checked by loadLab (versions.go)
	product.FullName = "VMware ESXi " + rel.version + " build-" + rel.build
	product.Version, product.Build, product.ApiVersion = rel.version, rel.build, rel.apiVersion
	product.LicenseProductVersion = majorMinor(rel.version)
	h.Config.Product = product
	h.Summary.Config.Product = &product

	// Capability (nil in the stock model).
	h.Capability = &types.HostCapability{
		RecursiveResourcePoolsSupported:         true,
		CpuMemoryResourceConfigurationSupported: true,
		RebootSupported:                         capOr(lh, "rebootSupported", true),
		ShutdownSupported:                       capOr(lh, "shutdownSupported", true),
		VmotionSupported:                        capOr(lh, "vmotionSupported", true),
		StandbySupported:                        capOr(lh, "standbySupported", false),
		MaintenanceModeSupported:                capOr(lh, "maintenanceModeSupported", true),
		MaxSupportedVcpus:                       768,
		MaxRunningVMs:                           1024,
		MaxRegisteredVMs:                        4096,
		DatastorePrincipalSupported:             true,
		NfsSupported:                            true,
		IscsiSupported:                          true,
		VlanTaggingSupported:                    true,
		NicTeamingSupported:                     true,
		HighGuestMemSupported:                   true,
		PerVmSwapFiles:                          true,
		LocalSwapDatastoreSupported:             true,
		PreAssignedPCIUnitNumbersSupported:      true,
		ScreenshotSupported:                     true,
	}

	// Managers the stock configManager points at but never registered. The vGPU types the host
	// offers (config.sharedPassthruGpuTypes / sharedGpuCapabilities) follow from the driver, the
	// graphics types and MIG modes in effect: publish (real-lab notes V9).
	hs.gm = &GraphicsManager{hs: hs}
	hs.gm.Self = types.ManagedObjectReference{
		Type: "HostGraphicsManager", Value: "graphicsManager-" + h.Self.Value,
	}
	simulator.Map.Put(hs.gm)
	gmRef := hs.gm.Self
	h.ConfigManager.GraphicsManager = &gmRef

	hs.pt = &PciPassthruSystem{hs: hs}
	hs.pt.Self = types.ManagedObjectReference{
		Type: "HostPciPassthruSystem", Value: "pciPassthruSystem-" + h.Self.Value,
	}
	gpuIDs := map[string]bool{}
	for _, g := range lh.GPUs {
		gpuIDs[g.PciID] = true
	}
	for _, info := range h.Config.PciPassthruInfo {
		if !gpuIDs[info.GetHostPciPassthruInfo().Id] {
			hs.pt.base = append(hs.pt.base, info)
		}
	}
	simulator.Map.Put(hs.pt)
	ptRef := hs.pt.Self
	h.ConfigManager.PciPassthruSystem = &ptRef

	hs.ss = &ServiceSystem{hs: hs}
	hs.ss.Self = types.ManagedObjectReference{
		Type: "HostServiceSystem", Value: "serviceSystem-" + h.Self.Value,
	}
	hs.ss.ServiceInfo.Service = []types.HostService{
		{Key: "xorg", Label: "X.Org Server", Running: true, Policy: "on"},
		// SSH runs at start (an admin started it to let Ansible in) and follows its policy at
		// every boot: "off", ESXi's default, stops it (real-lab notes V6).
		{Key: "TSM-SSH", Label: "SSH", Running: true, Policy: lh.SSHPolicy, Ruleset: []string{"sshServer"}},
		{Key: "ntpd", Label: "NTP Daemon", Running: false, Policy: "off", Ruleset: []string{"ntpClient"}},
	}
	simulator.Map.Put(hs.ss)
	ssRef := hs.ss.Self
	h.ConfigManager.ServiceSystem = &ssRef

	h.Runtime.InMaintenanceMode = lh.MaintenanceMode
	if h.Config != nil {
		h.Config.LockdownMode = types.HostLockdownMode(lh.LockdownMode)
	}

	mu.Lock()
	states[h.Self] = hs
	hs.publish()
	mu.Unlock()
	return hs
}

func capOr(lh *LabHost, key string, def bool) bool {
	if v, ok := lh.Capability[key]; ok {
		return v
	}
	return def
}

func vgpuCapOr(lh *LabHost, key string, def bool) bool {
	if v, ok := lh.VgpuCapabilities[key]; ok {
		return v
	}
	return def
}

// driverLoaded: the NVIDIA host driver runs (lab key driver_loaded, default true).
func (hs *hostState) driverLoaded() bool {
	return hs.lab.DriverLoaded == nil || *hs.lab.DriverLoaded
}

// graphicsType is HostGraphicsInfo.graphicsType of a GPU: direct in passthrough, basic while no
// host driver is loaded (vSphere API HostGraphicsInfoGraphicsType: "Basic graphics when no host
// driver is available"), else the type in effect (real-lab notes V9).
func (hs *hostState) graphicsType(g *gpuState) string {
	switch {
	case g.passthruActive:
		return "direct"
	case !hs.driverLoaded():
		return "basic"
	}
	return g.active
}

// offersKind says whether a GPU offers vGPU types of a kind (MIG-backed or time-sliced) now, and
// why not: the vGPU manager offers types only with its driver loaded on a GPU in Shared Direct
// mode, MIG-backed types only in MIG mode, time-sliced ones only outside it (real-lab notes V9;
// a GPU whose lab entry has no mig_mode offers both).
func (hs *hostState) offersKind(g *gpuState, mig bool) (bool, string) {
	if gt := hs.graphicsType(g); gt != "sharedDirect" {
		why := "graphics type " + gt + ", not sharedDirect"
		switch gt {
		case "basic":
			why = "graphics type basic: no NVIDIA host driver loaded"
		case "direct":
			why = "in passthrough mode"
		}
		return false, why
	}
	if g.MigMode != nil && *g.MigMode != mig {
		if mig {
			return false, "not in MIG mode (MIG-backed types need it)"
		}
		return false, "in MIG mode (time-sliced types need it off)"
	}
	return true, ""
}

// offeredTypes: the lab's vGPU types some GPU offers now, in lab order; mu held.
func (hs *hostState) offeredTypes() []string {
	var out []string
	for _, t := range hs.lab.VgpuTypes {
		mig, _, _ := vgpuShape(t)
		for _, g := range hs.gpus {
			if ok, _ := hs.offersKind(g, mig); ok {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

// configuredType is the graphics type the configuration gives a GPU (a per-device override, else
// the host default).
func (hs *hostState) configuredType(g *gpuState) string {
	for _, d := range hs.config.DeviceType {
		if d.DeviceId == g.PciID {
			return d.GraphicsType
		}
	}
	return hs.config.HostDefaultGraphicsType
}

// applyConfig puts the configured graphics types and passthrough flags in effect (reboot).
func (hs *hostState) applyConfig() {
	for _, g := range hs.gpus {
		g.active = hs.configuredType(g)
		g.passthruActive = g.passthruEnabled
	}
}

// publish copies the state into the managed objects' properties (mu held).
func (hs *hostState) publish() {
	var infos []types.HostGraphicsInfo
	var pt []types.BaseHostPciPassthruInfo
	pt = append(pt, hs.pt.base...)
	for _, g := range hs.gpus {
		kind := hs.graphicsType(g)
		var vms []types.ManagedObjectReference
		seen := map[types.ManagedObjectReference]bool{}
		for _, u := range g.uses {
			if !seen[u.vm] {
				vms = append(vms, u.vm)
				seen[u.vm] = true
			}
		}
		infos = append(infos, types.HostGraphicsInfo{
			DeviceName: g.Name, VendorName: nvidiaVendorName, PciId: g.PciID,
			GraphicsType: kind, MemorySizeInKB: g.MemoryMB * 1024, Vm: vms,
		})
		pt = append(pt, &types.HostPciPassthruInfo{
			Id: g.PciID, DependentDevice: g.PciID, PassthruCapable: true,
			PassthruEnabled: g.passthruEnabled, PassthruActive: g.passthruActive,
		})
	}
	cfg := hs.config
	cfg.DeviceType = append([]types.HostGraphicsConfigDeviceType(nil), hs.config.DeviceType...)
	offered := hs.offeredTypes()
	var caps []types.HostSharedGpuCapabilities
	for _, t := range offered {
		caps = append(caps, types.HostSharedGpuCapabilities{
			Vgpu:                    t,
			DiskSnapshotSupported:   vgpuCapOr(hs.lab, "diskSnapshotSupported", true),
			MemorySnapshotSupported: vgpuCapOr(hs.lab, "memorySnapshotSupported", true),
			SuspendSupported:        vgpuCapOr(hs.lab, "suspendSupported", true),
			MigrateSupported:        vgpuCapOr(hs.lab, "migrateSupported", true),
		})
	}
	hs.gm.SharedPassthruGpuTypes, hs.gm.SharedGpuCapabilities = offered, caps
	hs.host.Config.SharedPassthruGpuTypes, hs.host.Config.SharedGpuCapabilities = offered, caps

	hs.gm.GraphicsInfo = infos
	hs.gm.GraphicsConfig = &cfg
	hs.pt.PciPassthruInfo = pt
	hs.host.Config.GraphicsInfo = infos
	hs.host.Config.GraphicsConfig = &cfg
	hs.host.Config.PciPassthruInfo = pt
	simulator.Map.Update(hs.gm, []types.PropertyChange{
		{Name: "graphicsInfo", Val: infos}, {Name: "graphicsConfig", Val: &cfg},
		{Name: "sharedPassthruGpuTypes", Val: offered}, {Name: "sharedGpuCapabilities", Val: caps},
	})
	simulator.Map.Update(hs.pt, []types.PropertyChange{{Name: "pciPassthruInfo", Val: pt}})
	hs.writeVgpuState()
}

type vgpuStateVgpu struct {
	VM             string `json:"vm"`
	VMUUID         string `json:"vm_uuid"`
	VgpuType       string `json:"vgpu_type"`
	GpuInstanceID  int    `json:"gpu_instance_id"`
	PlacementStart int    `json:"placement_start"`
	PlacementSize  int    `json:"placement_size"`
}

type vgpuStateGpu struct {
	PciID string          `json:"pci_id"`
	Name  string          `json:"name"`
	Vgpus []vgpuStateVgpu `json:"vgpus"`
	// in DirectPath I/O (passthrough) mode now: the host driver and nvidia-smi do not see it
	// (real-lab notes V11)
	Passthrough bool `json:"passthrough"`
}

type serviceState struct {
	Running bool   `json:"running"`
	Policy  string `json:"policy"`
}

// writeVgpuState writes the host's running vGPUs, services and lockdown mode to
// <host_state_dir>/<host>.json (atomically),
// what the host's vGPU manager knows: the ESXi stand-in's nvidia-smi vgpu -q and mig -lgi read
// it. mu held.
func (hs *hostState) writeVgpuState() {
	dir := hs.lab.HostStateDir
	if dir == "" {
		return
	}
	state := struct {
		Host string         `json:"host"`
		Gpus []vgpuStateGpu `json:"gpus"`
		// what the host's sshd and login need to know (real-lab notes V6)
		Services     map[string]serviceState `json:"services"`
		LockdownMode string                  `json:"lockdown_mode"`
	}{Host: hs.lab.Name, Gpus: []vgpuStateGpu{}, Services: map[string]serviceState{},
		LockdownMode: hs.lab.LockdownMode}
	if hs.ss != nil {
		for _, svc := range hs.ss.ServiceInfo.Service {
			state.Services[svc.Key] = serviceState{Running: svc.Running, Policy: svc.Policy}
		}
	}
	for _, g := range hs.gpus {
		sg := vgpuStateGpu{PciID: g.PciID, Name: g.Name, Vgpus: []vgpuStateVgpu{},
			Passthrough: g.passthruActive}
		for _, u := range g.uses {
			v := vgpuStateVgpu{VgpuType: u.vgpu, GpuInstanceID: u.gi, PlacementStart: u.start,
				PlacementSize: u.size}
			if vm, ok := simulator.Map.Get(u.vm).(*simulator.VirtualMachine); ok {
				v.VM = vm.Name
				if vm.Config != nil {
					v.VMUUID = vm.Config.Uuid
					if v.VMUUID == "" {
						v.VMUUID = vm.Config.InstanceUuid
					}
				}
			}
			sg.Vgpus = append(sg.Vgpus, v)
		}
		state.Gpus = append(state.Gpus, sg)
	}
	data, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		return
	}
	final := filepath.Join(dir, hs.lab.Name+".json")
	tmp := final + ".tmp"
	if os.WriteFile(tmp, append(data, '\n'), 0o644) == nil {
		_ = os.Rename(tmp, final)
	}
}

// setRuntime changes the host's runtime state (and tells waiting property collectors).
func (hs *hostState) setRuntime(conn types.HostSystemConnectionState, power types.HostSystemPowerState,
	boot bool) {
	h := hs.host
	h.Runtime.ConnectionState = conn
	h.Runtime.PowerState = power
	changes := []types.PropertyChange{
		{Name: "runtime.connectionState", Val: conn},
		{Name: "runtime.powerState", Val: power},
	}
	if boot {
		now := time.Now()
		h.Runtime.BootTime = &now
		changes = append(changes, types.PropertyChange{Name: "runtime.bootTime", Val: now})
	}
	simulator.Map.Update(h, changes)
}

func (hs *hostState) connected() bool {
	return hs.host.Runtime.ConnectionState == types.HostSystemConnectionStateConnected
}

// notConnected is the fault of an operation on a host that is away (rebooting, shut down).
func (hs *hostState) notConnected() (types.BaseMethodFault, string) {
	return &types.HostNotConnected{}, "host " + hs.host.Name + " is " +
		string(hs.host.Runtime.ConnectionState) + " (rebooting or shut down)"
}

// --- HostGraphicsManager methods ----------------------------------------------------------------

func (g *GraphicsManager) UpdateGraphicsConfig(ctx *simulator.Context,
	req *types.UpdateGraphicsConfig) soap.HasFault {
	body := &methods.UpdateGraphicsConfigBody{}
	hs := g.hs
	if !hs.connected() {
		f, msg := hs.notConnected()
		body.Fault_ = faultOf(f, msg)
		return body
	}
	c := req.Config
	invalid := func(prop, msg string) soap.HasFault {
		body.Fault_ = faultOf(&types.InvalidArgument{InvalidProperty: prop}, msg)
		return body
	}
	if c.HostDefaultGraphicsType != "" && !validGraphicsType(c.HostDefaultGraphicsType) {
		return invalid("hostDefaultGraphicsType",
			"hostDefaultGraphicsType "+c.HostDefaultGraphicsType+" is not shared or sharedDirect")
	}
	if c.SharedPassthruAssignmentPolicy != "" && !validPolicy(c.SharedPassthruAssignmentPolicy) {
		return invalid("sharedPassthruAssignmentPolicy", "sharedPassthruAssignmentPolicy "+
			c.SharedPassthruAssignmentPolicy+" is not performance or consolidation")
	}
	known := map[string]bool{}
	for _, gpu := range hs.gpus {
		known[gpu.PciID] = true
	}
	for _, d := range c.DeviceType {
		if !known[d.DeviceId] {
			return invalid("deviceType", "deviceType: no GPU with PCI id "+d.DeviceId)
		}
		if !validGraphicsType(d.GraphicsType) {
			return invalid("deviceType", "deviceType "+d.DeviceId+": graphicsType "+
				d.GraphicsType+" is not shared or sharedDirect")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if c.HostDefaultGraphicsType != "" {
		hs.config.HostDefaultGraphicsType = c.HostDefaultGraphicsType
	}
	if c.SharedPassthruAssignmentPolicy != "" {
		hs.config.SharedPassthruAssignmentPolicy = c.SharedPassthruAssignmentPolicy
	}
	if c.DeviceType != nil {
		hs.config.DeviceType = append([]types.HostGraphicsConfigDeviceType(nil), c.DeviceType...)
	}
	if hs.lab.GraphicsApply == "immediate" {
		for _, gpu := range hs.gpus {
			gpu.active = hs.configuredType(gpu)
		}
	}
	hs.publish()
	body.Res = &types.UpdateGraphicsConfigResponse{}
	return body
}

func (g *GraphicsManager) RefreshGraphicsManager(ctx *simulator.Context,
	req *types.RefreshGraphicsManager) soap.HasFault {
	body := &methods.RefreshGraphicsManagerBody{}
	if !g.hs.connected() {
		f, msg := g.hs.notConnected()
		body.Fault_ = faultOf(f, msg)
		return body
	}
	mu.Lock()
	g.hs.publish()
	mu.Unlock()
	body.Res = &types.RefreshGraphicsManagerResponse{}
	return body
}

// IsSharedGraphicsActive: true when a GPU is in "shared" (vSGA) mode.
func (g *GraphicsManager) IsSharedGraphicsActive(ctx *simulator.Context,
	req *types.IsSharedGraphicsActive) soap.HasFault {
	active := false
	mu.Lock()
	for _, gpu := range g.hs.gpus {
		active = active || (gpu.active == "shared" && !gpu.passthruActive)
	}
	mu.Unlock()
	return &methods.IsSharedGraphicsActiveBody{
		Res: &types.IsSharedGraphicsActiveResponse{Returnval: active},
	}
}

// --- HostPciPassthruSystem methods --------------------------------------------------------------

func (p *PciPassthruSystem) Refresh(ctx *simulator.Context, req *types.Refresh) soap.HasFault {
	mu.Lock()
	p.hs.publish()
	mu.Unlock()
	return &methods.RefreshBody{Res: &types.RefreshResponse{}}
}

// UpdatePassthruConfig enables or disables passthrough of the lab's GPUs; it takes effect at the
// next reboot, or at once with applyNow when no VM uses the GPU.
func (p *PciPassthruSystem) UpdatePassthruConfig(ctx *simulator.Context,
	req *types.UpdatePassthruConfig) soap.HasFault {
	body := &methods.UpdatePassthruConfigBody{}
	hs := p.hs
	if !hs.connected() {
		f, msg := hs.notConnected()
		body.Fault_ = faultOf(f, msg)
		return body
	}
	mu.Lock()
	defer mu.Unlock()
	byID := map[string]*gpuState{}
	for _, g := range hs.gpus {
		byID[g.PciID] = g
	}
	for _, c := range req.Config {
		cfg := c.GetHostPciPassthruConfig()
		if byID[cfg.Id] == nil {
			body.Fault_ = faultOf(&types.HostConfigFault{},
				"PCI device "+cfg.Id+" is not a GPU of this simulated host")
			return body
		}
	}
	for _, c := range req.Config {
		cfg := c.GetHostPciPassthruConfig()
		g := byID[cfg.Id]
		g.passthruEnabled = cfg.PassthruEnabled
		if cfg.ApplyNow != nil && *cfg.ApplyNow && len(g.uses) == 0 {
			g.passthruActive = g.passthruEnabled
		}
	}
	hs.publish()
	body.Res = &types.UpdatePassthruConfigResponse{}
	return body
}

// --- GPU placement ---------------------------------------------------------------------------

// vgpusOf lists the vGPU types of a VM's VirtualPCIPassthrough devices with a vmiop backing, each
// with its pin: the ExtraConfig pciPassthru<N>.cfg.gpu-pci-id of the N-th (from 0) PCI
// passthrough device.
func vgpusOf(vm *simulator.VirtualMachine) []vgpuReq {
	var out []vgpuReq
	if vm.Config == nil {
		return out
	}
	extra := map[string]string{}
	for _, o := range vm.Config.ExtraConfig {
		if v := o.GetOptionValue(); v != nil {
			extra[strings.ToLower(v.Key)] = fmt.Sprint(v.Value)
		}
	}
	n := 0
	for _, d := range vm.Config.Hardware.Device {
		if p, ok := d.(*types.VirtualPCIPassthrough); ok {
			if b, ok := p.Backing.(*types.VirtualPCIPassthroughVmiopBackingInfo); ok {
				pin := strings.ToLower(strings.TrimSpace(extra[fmt.Sprintf("pcipassthru%d.cfg.gpu-pci-id", n)]))
				out = append(out, vgpuReq{vgpu: b.Vgpu, pin: pin})
			}
			n++
		}
	}
	return out
}

// migRule is the placement rule of a MIG-backed vGPU type on a GPU; ok false: no slot model.
func (hs *hostState) migRule(g *gpuState, vgpu string) (MigPlacement, bool) {
	if g.MigMemorySlices <= 0 {
		return MigPlacement{}, false
	}
	for t, pl := range hs.lab.MigPlacements {
		if strings.EqualFold(t, vgpu) {
			return pl, true
		}
	}
	return MigPlacement{}, false
}

// firstFit is the start slot NVIDIA's vGPU manager picks for a new GPU instance when vSphere
// creates it: the lowest allowed start whose memory slices are all free (real-lab notes V2;
// NVIDIA AI Enterprise vGPU appendix: "VMware vSphere creates the GPU instances"). -1: none.
func (g *gpuState) firstFit(pl MigPlacement) int {
	used := map[int]bool{}
	for _, u := range g.uses {
		for k := 0; k < u.size; k++ {
			used[u.start+k] = true
		}
	}
	starts := append([]int(nil), pl.Starts...)
	sort.Ints(starts)
	for _, st := range starts {
		if st+pl.Size > g.MigMemorySlices {
			continue
		}
		free := true
		for k := 0; k < pl.Size; k++ {
			free = free && !used[st+k]
		}
		if free {
			return st
		}
	}
	return -1
}

// newGpuInstanceID: the lowest free id from 1 on this GPU; 0 for an instance of the whole GPU.
// An approximation: the driver's ids follow profile and placement.
func (g *gpuState) newGpuInstanceID(size int) int {
	if size >= g.MigMemorySlices {
		return 0
	}
	taken := map[int]bool{}
	for _, u := range g.uses {
		taken[u.gi] = true
	}
	id := 1
	for taken[id] {
		id++
	}
	return id
}

// fits says whether a GPU can take one more vGPU of the given type, where its GPU instance would
// start (-1 when not modelled), and why not. A GPU holds either MIG-backed types or one
// time-sliced type (framebuffer summed); a MIG type with placement rules needs a free start
// (first fit), one without them free compute slices.
func (hs *hostState) fits(g *gpuState, vgpu string) (bool, string, int) {
	mig, _, _ := vgpuShape(vgpu)
	if ok, why := hs.offersKind(g, mig); !ok { // driver, graphics type, MIG mode (V9)
		return false, why, -1
	}
	pl, modelled := hs.migRule(g, vgpu)
	ok, why := g.fitsShape(vgpu, modelled)
	if !ok {
		return false, why, -1
	}
	if modelled {
		st := g.firstFit(pl)
		if st < 0 {
			return false, "no free start slot for its GPU instance (starts " +
				fmt.Sprint(pl.Starts) + ", " + fmt.Sprint(pl.Size) + " memory slices)", -1
		}
		return true, "", st
	}
	return true, "", -1
}

// fitsShape checks what does not depend on start slots: passthrough, graphics type, no mixing of
// MIG-backed and time-sliced types (one time-sliced type per GPU), framebuffer, and -- unless the
// new vGPU's slot is modelled (slots) and every MIG vGPU on the GPU has one -- compute slices
// summed.
func (g *gpuState) fitsShape(vgpu string, slots bool) (bool, string) {
	if g.passthruActive {
		return false, "in passthrough mode"
	}
	if g.active != "sharedDirect" {
		return false, "graphics type " + g.active + " (vGPU needs sharedDirect, then a reboot)"
	}
	mig, slices, fb := vgpuShape(vgpu)
	usedSlices, usedFB := 0, 0
	for _, u := range g.uses {
		umig, us, ufb := vgpuShape(u.vgpu)
		if umig != mig || (!mig && u.vgpu != vgpu) {
			return false, "holds " + u.vgpu
		}
		usedSlices += us
		usedFB += ufb
		slots = slots && u.size > 0
	}
	if mig && !slots && g.MigComputeSlices > 0 && usedSlices+slices > g.MigComputeSlices {
		return false, "no free compute slices"
	}
	if int64(usedFB+fb)*1024 > g.MemoryMB {
		return false, "not enough free framebuffer"
	}
	return true, ""
}

// place picks a GPU for each vGPU (distinct GPUs for one VM) by the host's assignment policy
// (performance: the GPU holding the fewest vGPUs, consolidation: the one holding the most that
// fits; ties: lab order, which is PCI order), or the pinned GPU, and the MIG start slot (first
// fit); it records the uses as pending; mu held. It returns an explanation when some vGPU does
// not fit.
func (hs *hostState) place(vm types.ManagedObjectReference, vgpus []vgpuReq) string {
	taken := map[*gpuState]bool{}
	type pick struct {
		g     *gpuState
		vgpu  string
		start int
	}
	var picks []pick
	for _, req := range vgpus {
		vgpu := req.vgpu
		var cands []*gpuState
		starts := map[*gpuState]int{}
		var why []string
		pinned := false
		for _, g := range hs.gpus {
			if req.pin != "" && !strings.EqualFold(g.PciID, req.pin) {
				continue
			}
			pinned = pinned || req.pin != ""
			if taken[g] {
				why = append(why, g.PciID+": holds another vGPU of this VM")
				continue
			}
			if ok, reason, st := hs.fits(g, vgpu); ok {
				cands = append(cands, g)
				starts[g] = st
			} else {
				why = append(why, g.PciID+": "+reason)
			}
		}
		if req.pin != "" && !pinned {
			return "vGPU " + vgpu + " is pinned to " + req.pin +
				" (pciPassthru.cfg.gpu-pci-id), which is no GPU of host " + hs.host.Name
		}
		if len(cands) == 0 {
			msg := "no GPU of host " + hs.host.Name + " can take vGPU " + vgpu
			if req.pin != "" {
				msg += " pinned to " + req.pin + " (pciPassthru.cfg.gpu-pci-id)"
			}
			if len(why) > 0 {
				msg += " (" + strings.Join(why, "; ") + ")"
			}
			return msg
		}
		consolidate := hs.config.SharedPassthruAssignmentPolicy == "consolidation"
		sort.SliceStable(cands, func(i, j int) bool {
			if consolidate {
				return len(cands[i].uses) > len(cands[j].uses)
			}
			return len(cands[i].uses) < len(cands[j].uses)
		})
		taken[cands[0]] = true
		picks = append(picks, pick{cands[0], vgpu, starts[cands[0]]})
	}
	for _, p := range picks {
		u := gpuUse{vm: vm, vgpu: p.vgpu, pending: true, start: -1, size: -1, gi: -1}
		if p.start >= 0 {
			pl, _ := hs.migRule(p.g, p.vgpu)
			u.start, u.size = p.start, pl.Size
			u.gi = p.g.newGpuInstanceID(pl.Size)
		}
		p.g.uses = append(p.g.uses, u)
	}
	hs.publish()
	return ""
}

// reconcile drops the uses of VMs that are gone or no longer powered on, and confirms the
// pending uses of vm (nil: none) when it is powered on; mu held.
func reconcile(vm *types.ManagedObjectReference) {
	for _, hs := range states {
		changed := false
		for _, g := range hs.gpus {
			kept := g.uses[:0]
			for _, u := range g.uses {
				on := false
				if obj, ok := simulator.Map.Get(u.vm).(*simulator.VirtualMachine); ok {
					on = obj.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn
				}
				if vm != nil && u.vm == *vm {
					u.pending = false
				}
				if on || u.pending {
					kept = append(kept, u)
				} else {
					changed = true
				}
			}
			g.uses = kept
		}
		if changed || vm != nil {
			hs.publish()
		}
	}
}

// --- HostServiceSystem methods ------------------------------------------------------------------

func (s *ServiceSystem) service(id string) (*types.HostService, *soap.Fault) {
	if !s.hs.connected() {
		f, msg := s.hs.notConnected()
		return nil, faultOf(f, msg)
	}
	for i := range s.ServiceInfo.Service {
		if s.ServiceInfo.Service[i].Key == id {
			return &s.ServiceInfo.Service[i], nil
		}
	}
	return nil, faultOf(&types.NotFound{}, "no service "+id+" on the simulated host")
}

func (s *ServiceSystem) setRunning(svc *types.HostService, running bool) {
	mu.Lock()
	svc.Running = running
	if svc.Key == "xorg" && running {
		for _, g := range s.hs.gpus {
			if len(g.uses) == 0 {
				g.active = s.hs.configuredType(g)
			}
		}
	}
	s.hs.publish()
	mu.Unlock()
	simulator.Map.Update(s, []types.PropertyChange{{Name: "serviceInfo", Val: s.ServiceInfo}})
}

// boot starts the services whose policy is "on" and stops the others, as ESXi does at boot
// ("off" = start and stop manually; "automatic" follows firewall ports, here: stopped, as
// nothing opens them). mu held.
func (s *ServiceSystem) boot() {
	for i := range s.ServiceInfo.Service {
		svc := &s.ServiceInfo.Service[i]
		svc.Running = svc.Policy == "on"
	}
}

func (s *ServiceSystem) RestartService(ctx *simulator.Context, req *types.RestartService) soap.HasFault {
	body := &methods.RestartServiceBody{}
	svc, f := s.service(req.Id)
	if f != nil {
		body.Fault_ = f
		return body
	}
	s.setRunning(svc, true)
	body.Res = &types.RestartServiceResponse{}
	return body
}

func (s *ServiceSystem) StartService(ctx *simulator.Context, req *types.StartService) soap.HasFault {
	body := &methods.StartServiceBody{}
	svc, f := s.service(req.Id)
	if f != nil {
		body.Fault_ = f
		return body
	}
	s.setRunning(svc, true)
	body.Res = &types.StartServiceResponse{}
	return body
}

func (s *ServiceSystem) StopService(ctx *simulator.Context, req *types.StopService) soap.HasFault {
	body := &methods.StopServiceBody{}
	svc, f := s.service(req.Id)
	if f != nil {
		body.Fault_ = f
		return body
	}
	s.setRunning(svc, false)
	body.Res = &types.StopServiceResponse{}
	return body
}

func (s *ServiceSystem) UpdateServicePolicy(ctx *simulator.Context,
	req *types.UpdateServicePolicy) soap.HasFault {
	body := &methods.UpdateServicePolicyBody{}
	svc, f := s.service(req.Id)
	if f != nil {
		body.Fault_ = f
		return body
	}
	mu.Lock()
	svc.Policy = req.Policy
	s.hs.publish()
	mu.Unlock()
	simulator.Map.Update(s, []types.PropertyChange{{Name: "serviceInfo", Val: s.ServiceInfo}})
	body.Res = &types.UpdateServicePolicyResponse{}
	return body
}

func (s *ServiceSystem) RefreshServices(ctx *simulator.Context,
	req *types.RefreshServices) soap.HasFault {
	return &methods.RefreshServicesBody{Res: &types.RefreshServicesResponse{}}
}
