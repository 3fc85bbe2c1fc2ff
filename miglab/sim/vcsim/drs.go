package main

// DRS initial placement (real-lab notes V5: NVIDIA AI Enterprise user guide, "vGPU in a DRS
// cluster", asks for Partially Automated or Manual; vSphere DrsBehaviorInfo: Partially and Fully
// Automated DRS choose the host when a VM powers on). A VM in a DRS cluster whose effective
// behaviour (its override in configurationEx.drsVmConfig, else the cluster's defaultVmBehavior)
// is partiallyAutomated or fullyAutomated is moved at power-on to the cluster host DRS prefers;
// a per-VM override with enabled=false or behavior=manual keeps it on its host.
//
// The preference is a stand-in for DRS's scoring, which VMware does not publish: among the
// cluster's connected hosts out of maintenance mode that offer all the VM's vGPU types, the one
// running the fewest powered-on VMs; its current host wins a tie, then the host name.

import (
	"sort"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// drsBehavior is the VM's effective DRS automation level; "" when DRS does not act on it.
func drsBehavior(vm *simulator.VirtualMachine, cr *simulator.ClusterComputeResource) string {
	cfg, ok := cr.ConfigurationEx.(*types.ClusterConfigInfoEx)
	if !ok || cfg.DrsConfig.Enabled == nil || !*cfg.DrsConfig.Enabled {
		return ""
	}
	behavior := string(cfg.DrsConfig.DefaultVmBehavior)
	if behavior == "" {
		behavior = string(types.DrsBehaviorFullyAutomated) // the API's default
	}
	for _, o := range cfg.DrsVmConfig {
		if o.Key != vm.Self {
			continue
		}
		if o.Enabled != nil && !*o.Enabled {
			return ""
		}
		if o.Behavior != "" {
			behavior = string(o.Behavior)
		}
	}
	if behavior == string(types.DrsBehaviorManual) {
		return "" // manual: DRS only recommends; the API power-on keeps the host
	}
	return behavior
}

func poweredOnCount(h *simulator.HostSystem) int {
	n := 0
	for _, ref := range h.Vm {
		if v, ok := simulator.Map.Get(ref).(*simulator.VirtualMachine); ok &&
			v.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn {
			n++
		}
	}
	return n
}

// drsInitialPlacement moves a VM that DRS places to the host it prefers (see above) before the
// power-on; it reports whether the VM moved.
func drsInitialPlacement(vm *simulator.VirtualMachine) bool {
	if vm.Runtime.Host == nil {
		return false
	}
	cur, ok := simulator.Map.Get(*vm.Runtime.Host).(*simulator.HostSystem)
	if !ok || cur.Parent == nil {
		return false
	}
	cr, ok := simulator.Map.Get(*cur.Parent).(*simulator.ClusterComputeResource)
	if !ok || drsBehavior(vm, cr) == "" {
		return false
	}
	wanted := vgpusOf(vm)
	type candidate struct {
		host *simulator.HostSystem
		load int
	}
	var cands []candidate
	for _, ref := range cr.Host {
		h, ok := simulator.Map.Get(ref).(*simulator.HostSystem)
		hs := stateOf(ref)
		if !ok || hs == nil || !hs.connected() || h.Runtime.InMaintenanceMode {
			continue
		}
		offered := map[string]bool{}
		for _, t := range h.Config.SharedPassthruGpuTypes {
			offered[t] = true
		}
		fits := true
		for _, v := range wanted {
			fits = fits && offered[v.vgpu]
		}
		if fits {
			cands = append(cands, candidate{h, poweredOnCount(h)})
		}
	}
	if len(cands) == 0 {
		return false
	}
	sort.Slice(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.load != b.load {
			return a.load < b.load
		}
		if (a.host == cur) != (b.host == cur) {
			return a.host == cur
		}
		return a.host.Name < b.host.Name
	})
	best := cands[0].host
	if best == cur {
		return false
	}
	simulator.Map.RemoveReference(cur, &cur.Vm, vm.Self)
	simulator.Map.AddReference(best, &best.Vm, vm.Self)
	ref := best.Self
	vm.Runtime.Host = &ref
	vm.Summary.Runtime.Host = &ref
	simulator.Map.Update(vm, []types.PropertyChange{
		{Name: "runtime.host", Val: ref}, {Name: "summary.runtime.host", Val: ref},
	})
	return true
}
