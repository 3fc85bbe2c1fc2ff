package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// faultBody is a SOAP fault reply to any method.
type faultBody struct {
	Fault_ *soap.Fault `xml:"http://schemas.xmlsoap.org/soap/envelope/ Fault,omitempty"`
}

func (b *faultBody) Fault() *soap.Fault { return b.Fault_ }

// faultOf wraps a fault with a message that clients show (pyVmomi: fault.msg).
func faultOf(f types.BaseMethodFault, msg string) *soap.Fault {
	f.GetMethodFault().FaultMessage = []types.LocalizableMessage{{Key: "miglab.vcsim", Message: msg}}
	return simulator.Fault(msg, f)
}

// taskBody is the reply of a *_Task method: the task's reference.
func taskBody(method string, task types.ManagedObjectReference) soap.HasFault {
	switch method {
	case "PowerOnVM_Task":
		return &methods.PowerOnVM_TaskBody{Res: &types.PowerOnVM_TaskResponse{Returnval: task}}
	case "ReconfigVM_Task":
		return &methods.ReconfigVM_TaskBody{Res: &types.ReconfigVM_TaskResponse{Returnval: task}}
	case "CreateVM_Task":
		return &methods.CreateVM_TaskBody{Res: &types.CreateVM_TaskResponse{Returnval: task}}
	case "CloneVM_Task":
		return &methods.CloneVM_TaskBody{Res: &types.CloneVM_TaskResponse{Returnval: task}}
	case "RebootHost_Task":
		return &methods.RebootHost_TaskBody{Res: &types.RebootHost_TaskResponse{Returnval: task}}
	case "ShutdownHost_Task":
		return &methods.ShutdownHost_TaskBody{
			Res: &types.ShutdownHost_TaskResponse{Returnval: task},
		}
	case "EnterMaintenanceMode_Task":
		return &methods.EnterMaintenanceMode_TaskBody{
			Res: &types.EnterMaintenanceMode_TaskResponse{Returnval: task},
		}
	case "ExitMaintenanceMode_Task":
		return &methods.ExitMaintenanceMode_TaskBody{
			Res: &types.ExitMaintenanceMode_TaskResponse{Returnval: task},
		}
	}
	panic("taskBody: " + method)
}

func taskName(method string) string {
	n := strings.TrimSuffix(method, "_Task")
	return strings.ToLower(n[:1]) + n[1:]
}

// failedTask runs a task that fails with fault, its localized message msg (the stock Task.Run
// writes only the fault's Go type there).
func failedTask(obj mo.Reference, method string, fault types.BaseMethodFault, msg string) soap.HasFault {
	return failedTaskDetail(obj, method, fault, msg, msg)
}

// failedTaskDetail fails a task the way real vCenter often does: a generic localized message
// ("Module 'DevicePowerOn' power on failed.") with the useful text in the fault's faultMessage[]
// (real-lab notes V14: vSphere API LocalizedMethodFault, MethodFault.faultMessage).
func failedTaskDetail(obj mo.Reference, method string, fault types.BaseMethodFault,
	msg, detail string) soap.HasFault {
	fault.GetMethodFault().FaultMessage = []types.LocalizableMessage{
		{Key: "miglab.vcsim", Message: detail},
	}
	task := simulator.CreateTask(obj, taskName(method),
		func(*simulator.Task) (types.AnyType, types.BaseMethodFault) { return nil, fault })
	ref := task.Run()
	simulator.Map.Update(task, []types.PropertyChange{{
		Name: "info.error",
		Val:  types.LocalizedMethodFault{Fault: fault, LocalizedMessage: msg},
	}})
	return taskBody(method, ref)
}

// okTask runs a task that succeeds.
func okTask(obj mo.Reference, method string) soap.HasFault {
	task := simulator.CreateTask(obj, taskName(method),
		func(*simulator.Task) (types.AnyType, types.BaseMethodFault) { return nil, nil })
	return taskBody(method, task.Run())
}

// hook serves methods the stock simulator lacks and checks some it has; nil: run the stock one.
func hook(ctx *simulator.Context, method string, this mo.Reference, req interface{}) soap.HasFault {
	switch obj := this.(type) {
	case *simulator.HostSystem:
		hs := stateOf(obj.Self)
		if hs == nil {
			return nil
		}
		switch method {
		case "RebootHost_Task":
			return hs.reboot(method, req.(*types.RebootHost_Task).Force, false)
		case "ShutdownHost_Task":
			return hs.reboot(method, req.(*types.ShutdownHost_Task).Force, true)
		case "EnterMaintenanceMode_Task":
			if !hs.connected() {
				f, msg := hs.notConnected()
				return failedTask(obj, method, f, msg)
			}
			// Real-lab notes V4 (vSphere API EnterMaintenanceMode_Task): without DRS nothing
			// moves a powered-on VM, and with evacuatePoweredOffVms nothing re-registers the
			// powered-off ones, so the task waits for its timeout and fails with a bare timeout
			// naming no VM. The wait is capped (maintenance_wait_cap_s) to keep tests short.
			var on, off int
			for _, ref := range obj.Vm {
				if vm, ok := simulator.Map.Get(ref).(*simulator.VirtualMachine); ok {
					if vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn {
						on++
					} else {
						off++
					}
				}
			}
			r := req.(*types.EnterMaintenanceMode_Task)
			evacuate := r.EvacuatePoweredOffVms == nil || *r.EvacuatePoweredOffVms // API default true
			if !clusterDrs(obj) && (on > 0 || (evacuate && off > 0)) {
				wait := float64(r.Timeout)
				if wait <= 0 || wait > hs.lab.MaintenanceWaitCapS {
					wait = hs.lab.MaintenanceWaitCapS
				}
				time.Sleep(time.Duration(wait * float64(time.Second)))
				return failedTask(obj, method, &types.Timedout{}, "Operation timed out.")
			}
		case "ExitMaintenanceMode_Task":
			if !hs.connected() {
				f, msg := hs.notConnected()
				return failedTask(obj, method, f, msg)
			}
		}
	case *simulator.Folder:
		if r, ok := req.(*types.CreateVM_Task); ok && r.Host != nil {
			if hs := stateOf(*r.Host); hs != nil && !hs.connected() {
				f, msg := hs.notConnected()
				return failedTask(obj, method, f, msg)
			}
		}
		if r, ok := req.(*types.CreateVM_Task); ok { // NIC backing vs network kind (V12)
			if f := nicBackingCheck(obj, method, obj.Self, createHost(r), r.Config.DeviceChange); f != nil {
				return f
			}
		}
	case *simulator.VirtualMachine:
		switch method {
		case "PowerOnVM_Task":
			return powerOnCheck(obj, method)
		case "ReconfigVM_Task":
			r := req.(*types.ReconfigVM_Task)
			if f := nicBackingCheck(obj, method, obj.Self, obj.Runtime.Host, r.Spec.DeviceChange); f != nil {
				return f // NIC backing vs network kind (V12)
			}
			return reconfigCheck(obj, method, r)
		case "CloneVM_Task": // NIC backings in the clone's spec, on the clone's host (V12)
			r := req.(*types.CloneVM_Task)
			host := r.Spec.Location.Host
			if host == nil {
				host = obj.Runtime.Host
			}
			changes := append([]types.BaseVirtualDeviceConfigSpec{}, r.Spec.Location.DeviceChange...)
			if r.Spec.Config != nil {
				changes = append(changes, r.Spec.Config.DeviceChange...)
			}
			return nicBackingCheck(obj, method, obj.Self, host, changes)
		}
	}
	return nil
}

// clusterDrs: whether the host's cluster has DRS enabled (configurationEx.drsConfig).
func clusterDrs(h *simulator.HostSystem) bool {
	if h.Parent == nil {
		return false
	}
	cr, ok := simulator.Map.Get(*h.Parent).(*simulator.ClusterComputeResource)
	if !ok {
		return false
	}
	cfg, ok := cr.ConfigurationEx.(*types.ClusterConfigInfoEx)
	return ok && cfg.DrsConfig.Enabled != nil && *cfg.DrsConfig.Enabled
}

// done follows up on finished calls: vGPU uses of VMs that powered on, off or went away.
func done(ctx *simulator.Context, method string, this mo.Reference, req interface{},
	res soap.HasFault) {
	defer guestDone(method, this, req, res) // clones and guest addresses (clones.go)
	switch method {
	case "CreateVM_Task", "ReconfigVM_Task", "CloneVM_Task":
		if vm := taskResultVM(method, this, res); vm != nil {
			simulator.Map.WithLock(vm, func() { fixVM(vm); fixNICNetworks(vm) })
		}
	case "PowerOnVM_Task":
		ref := this.Reference()
		mu.Lock()
		reconcile(&ref)
		mu.Unlock()
	case "PowerOffVM_Task", "ShutdownGuest", "SuspendVM_Task", "ResetVM_Task", "Destroy_Task",
		"UnregisterVM", "PowerOnMultiVM_Task", "RebootGuest":
		mu.Lock()
		reconcile(nil)
		mu.Unlock()
	}
}

// powerOnCheck refuses to power on a VM on a host that is away or in maintenance mode, and a
// vGPU VM whose memory is not fully reserved, whose vGPU type the host does not offer, or for
// which no GPU is free in sharedDirect mode. Otherwise it places the vGPUs and lets the stock
// power-on run.
func powerOnCheck(vm *simulator.VirtualMachine, method string) soap.HasFault {
	if vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOn || vm.Runtime.Host == nil {
		return nil // the stock method answers InvalidPowerState
	}
	drsInitialPlacement(vm) // DRS may choose another host (drs.go, real-lab notes V5)
	hs := stateOf(*vm.Runtime.Host)
	if hs == nil {
		return nil
	}
	if !hs.connected() {
		f, msg := hs.notConnected()
		return failedTask(vm, method, f, msg)
	}
	if hs.host.Runtime.InMaintenanceMode {
		return failedTask(vm, method, &types.InvalidState{},
			"host "+hs.host.Name+" is in maintenance mode: VMs cannot power on")
	}
	vgpus := vgpusOf(vm)
	if len(vgpus) == 0 {
		return nil
	}
	memMB := int64(vm.Config.Hardware.MemoryMB)
	locked := vm.Config.MemoryReservationLockedToMax != nil && *vm.Config.MemoryReservationLockedToMax
	var reserved int64
	if a := vm.Config.MemoryAllocation; a != nil && a.Reservation != nil {
		reserved = *a.Reservation
	}
	if !locked && reserved < memMB {
		return failedTask(vm, method, &types.GenericVmConfigFault{Reason: "memory reservation"},
			fmt.Sprintf("Invalid memory setting: memory reservation (sched.mem.min) should be "+
				"equal to memsize(%d). VM %s has a vGPU: reserve all its memory "+
				"(memoryReservationLockedToMax)", memMB, vm.Name))
	}
	offered := map[string]bool{}
	for _, t := range hs.host.Config.SharedPassthruGpuTypes {
		offered[t] = true
	}
	for _, req := range vgpus {
		v := req.vgpu
		if !offered[v] {
			return failedTask(vm, method, &types.GenericVmConfigFault{Reason: "vGPU type"},
				fmt.Sprintf("vGPU type %s of VM %s is not offered by host %s "+
					"(config.sharedPassthruGpuTypes: %s)", v, vm.Name, hs.host.Name,
					strings.Join(hs.host.Config.SharedPassthruGpuTypes, ", ")))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if why := hs.place(vm.Self, vgpus); why != "" {
		return failedTaskDetail(vm, method, &types.InsufficientResourcesFault{},
			"Module 'DevicePowerOn' power on failed.", "cannot power on "+vm.Name+": "+why)
	}
	return nil
}

// reconfigCheck refuses to add, remove or change PCI passthrough / vGPU devices of a powered-on
// VM (vSphere cannot hot-plug them).
func reconfigCheck(vm *simulator.VirtualMachine, method string, req *types.ReconfigVM_Task) soap.HasFault {
	if vm.Runtime.PowerState == types.VirtualMachinePowerStatePoweredOff {
		return nil
	}
	for _, c := range req.Spec.DeviceChange {
		spec := c.GetVirtualDeviceConfigSpec()
		if _, ok := spec.Device.(*types.VirtualPCIPassthrough); ok {
			return failedTask(vm, method, &types.InvalidPowerState{
				RequestedState: types.VirtualMachinePowerStatePoweredOff,
				ExistingState:  vm.Runtime.PowerState,
			}, "VM "+vm.Name+" is "+string(vm.Runtime.PowerState)+
				": PCI passthrough and vGPU devices change only while it is powered off")
		}
	}
	return nil
}

// reboot implements RebootHost_Task and ShutdownHost_Task (MethodNotFound in govmomi 0.24): the
// task succeeds at once; the host then goes notResponding (power state unknown, or poweredOff
// after a shutdown) and, after a reboot, comes back connected and poweredOn after the host's
// reboot_seconds (and, with reboot_hold, once that file is gone), with its configured graphics
// types in effect. A reboot needs maintenance mode
// unless forced; a forced one powers off the host's VMs.
func (hs *hostState) reboot(method string, force, shutdown bool) soap.HasFault {
	h := hs.host
	capable := h.Capability == nil || h.Capability.RebootSupported
	if shutdown {
		capable = h.Capability == nil || h.Capability.ShutdownSupported
	}
	if !capable {
		return failedTask(h, method, &types.NotSupported{},
			"host "+h.Name+" does not support "+taskName(method))
	}
	if !hs.connected() {
		f, msg := hs.notConnected()
		return failedTask(h, method, f, msg)
	}
	if !force && !h.Runtime.InMaintenanceMode {
		return failedTask(h, method, &types.InvalidState{},
			"host "+h.Name+" is not in maintenance mode (enter it first, or pass force)")
	}
	res := okTask(h, method)

	for _, ref := range h.Vm { // a forced reboot: the VMs go down with the host
		if vm, ok := simulator.Map.Get(ref).(*simulator.VirtualMachine); ok &&
			vm.Runtime.PowerState != types.VirtualMachinePowerStatePoweredOff {
			vm.Runtime.PowerState = types.VirtualMachinePowerStatePoweredOff
			vm.Summary.Runtime.PowerState = types.VirtualMachinePowerStatePoweredOff
			simulator.Map.Update(vm, []types.PropertyChange{
				{Name: "runtime.powerState", Val: types.VirtualMachinePowerStatePoweredOff},
				{Name: "summary.runtime.powerState", Val: types.VirtualMachinePowerStatePoweredOff},
			})
		}
	}
	mu.Lock()
	hs.gen++
	gen := hs.gen
	for _, g := range hs.gpus {
		g.uses = nil
	}
	hs.publish()
	mu.Unlock()

	if shutdown {
		hs.setRuntime(types.HostSystemConnectionStateNotResponding,
			types.HostSystemPowerStatePoweredOff, false)
		return res
	}
	hs.setRuntime(types.HostSystemConnectionStateNotResponding, types.HostSystemPowerStateUnknown,
		false)
	if hs.lab.RebootNeverReturns {
		return res
	}
	delay := time.Duration(hs.rebootSeconds * float64(time.Second))
	ack := hs.bootAck(gen)
	go func() {
		time.Sleep(delay)
		// The fault switch of a running lab: while the hold file exists the host stays away (a
		// test observes it, then removes the file: no race with this timer).
		for hs.lab.RebootHold != "" {
			if _, err := os.Stat(hs.lab.RebootHold); err != nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		ack()
		simulator.Map.WithLock(h, func() {
			mu.Lock()
			if hs.gen != gen {
				mu.Unlock()
				return
			}
			hs.applyConfig()
			hs.ss.boot()
			hs.publish()
			mu.Unlock()
			simulator.Map.Update(hs.ss, []types.PropertyChange{
				{Name: "serviceInfo", Val: hs.ss.ServiceInfo}})
			hs.setRuntime(types.HostSystemConnectionStateConnected,
				types.HostSystemPowerStatePoweredOn, true)
		})
	}()
	return res
}

// bootAck, with the lab's boot_ack_dir, writes <dir>/<host>.down = gen now and returns the wait
// for <dir>/<host>.up >= gen (the reboot link has booted the host's stand-in); else a no-op.
func (hs *hostState) bootAck(gen int) func() {
	dir := hs.lab.BootAckDir
	if dir == "" {
		return func() {}
	}
	base := filepath.Join(dir, hs.host.Name)
	tmp := base + ".down.tmp"
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(gen)+"\n"), 0o644); err == nil {
		_ = os.Rename(tmp, base+".down")
	}
	return func() {
		for {
			if b, err := os.ReadFile(base + ".up"); err == nil {
				if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= gen {
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// taskResultVM is the VM a finished CreateVM_Task / CloneVM_Task made, or ReconfigVM_Task's VM.
func taskResultVM(method string, this mo.Reference, res soap.HasFault) *simulator.VirtualMachine {
	if method == "ReconfigVM_Task" {
		vm, _ := this.(*simulator.VirtualMachine)
		return vm
	}
	var ref types.ManagedObjectReference
	switch b := res.(type) {
	case *methods.CreateVM_TaskBody:
		if b.Res == nil {
			return nil
		}
		ref = b.Res.Returnval
	case *methods.CloneVM_TaskBody:
		if b.Res == nil {
			return nil
		}
		ref = b.Res.Returnval
	default:
		return nil
	}
	task, ok := simulator.Map.Get(ref).(*simulator.Task)
	if !ok || task.Info.State != types.TaskInfoStateSuccess {
		return nil
	}
	vmRef, ok := task.Info.Result.(types.ManagedObjectReference)
	if !ok {
		return nil
	}
	vm, _ := simulator.Map.Get(vmRef).(*simulator.VirtualMachine)
	return vm
}

// fixVM does what vSphere does and the stock simulator does not: memoryReservationLockedToMax
// shows as a reservation of all memory, and a vGPU device is labelled as vSphere labels it.
func fixVM(vm *simulator.VirtualMachine) {
	if vm.Config == nil {
		return
	}
	if l := vm.Config.MemoryReservationLockedToMax; l != nil && *l {
		alloc := types.ResourceAllocationInfo{}
		if vm.Config.MemoryAllocation != nil {
			alloc = *vm.Config.MemoryAllocation
		}
		mem := int64(vm.Config.Hardware.MemoryMB)
		alloc.Reservation = &mem
		vm.Config.MemoryAllocation = &alloc
		vm.Summary.Config.MemoryReservation = vm.Config.Hardware.MemoryMB
	}
	n := 0
	for _, d := range vm.Config.Hardware.Device {
		p, ok := d.(*types.VirtualPCIPassthrough)
		if !ok {
			continue
		}
		if p.DeviceInfo == nil {
			p.DeviceInfo = &types.Description{Label: "pcipassthrough-"}
		}
		if info := p.DeviceInfo.GetDescription(); strings.HasPrefix(info.Label, "pcipassthrough-") {
			info.Label = fmt.Sprintf("PCI device %d", n)
			if b, ok := p.Backing.(*types.VirtualPCIPassthroughVmiopBackingInfo); ok {
				info.Summary = "NVIDIA GRID vGPU " + b.Vgpu
			}
		}
		n++
	}
}

// createHost is the host a CreateVM_Task puts the VM on: its host argument, else the pool's
// compute resource's only host; nil when it cannot be told.
func createHost(r *types.CreateVM_Task) *types.ManagedObjectReference {
	if r.Host != nil {
		return r.Host
	}
	pool, ok := simulator.Map.Get(r.Pool).(*simulator.ResourcePool)
	if !ok || pool.Owner.Value == "" {
		return nil
	}
	switch cr := simulator.Map.Get(pool.Owner).(type) {
	case *mo.ComputeResource:
		if len(cr.Host) == 1 {
			return &cr.Host[0]
		}
	case *simulator.ClusterComputeResource:
		if len(cr.Host) == 1 {
			return &cr.Host[0]
		}
	}
	return nil
}
