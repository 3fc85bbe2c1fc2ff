// Command miglab-vcsim is miglab's vSphere simulator: govmomi's vcsim (0.24, Debian's sources,
// built by miglab/sim/vcsim/build.sh) holding a vCenter (7.0.3 unless the lab file says 8.0.x)
// with one datacenter, one cluster, one datastore and network, and ESXi hosts that carry NVIDIA
// GPUs for MIG-backed vGPUs, as a lab file describes them; with -rest-upstream its /api/ is
// another server's (miglab.sim's vLCM REST server). Test infrastructure only;
// miglab/sim/vcsim/README.md has the details.
//
// Usage:
//
//	miglab-vcsim -lab lab.json [-listen 127.0.0.1:0] [-tlscert F -tlskey F]
//	             [-username U -password-file F | -password P] [-delay-json '{"CreateVM_Task": 1500}']
//	             [-delay MS] [-delay-jitter C] [-reboot-seconds S] [-watch-stdin] [-trace]
//	             [-rest-upstream http://127.0.0.1:PORT]
//
// On start it prints one line of JSON to stdout and keeps serving until SIGINT/SIGTERM (or, with
// -watch-stdin, until its standard input closes):
//
//	{"url": "https://127.0.0.1:PORT/sdk", "port": PORT, "pid": PID}
//
// Lab file (JSON; unknown keys are errors; values shown are the defaults where optional):
//
//	{
//	  "vcenter_version": "7.0.3",                         // optional: or 8.0.0 .. 8.0.3
//	  "cluster_image_managed": false,                     // optional: lifecycleManaged (vLCM)
//	  "datacenter": "dc1", "cluster": "cluster1",         // optional
//	  "datastore": "datastore1", "network": "VM Network", // optional
//	  "distributed_switch": "DSwitch",                    // optional (V12): a vDS, every host
//	  "distributed_port_groups": ["VM Network DV"],       //   a member, with these port groups
//	  "distributed_switch_hosts": ["esxi-01..."],         // optional: the switch's members (all)
//	  "opaque_networks": ["nsx-segment"],                 // optional: NSX OpaqueNetworks
//	  "hosts": [{
//	    "name": "esxi-01.sim.miglab.test",                // required, unique
//	    "esxi_version": "7.0.3",                          // optional: not newer than vCenter
//	    "cpus": 128,                                      // required: logical CPUs (threads)
//	    "cpu_cores": 64, "cpu_packages": 2,               // optional: cpus/2 and 2 (if even)
//	    "cpu_mhz": 2000, "cpu_model": "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz",  // optional
//	    "vendor": "miglab", "model": "simulated GPU server",                       // optional
//	    "memory_gb": 1024,                                // required
//	    "gpus": [{                                        // NVIDIA PCI devices (vendor 0x10de)
//	      "pci_id": "0000:3b:00.0",                       // required, DDDD:BB:SS.F
//	      "device_id": "0x20b5",                          // required
//	      "subsystem_device_id": "0x1533",                // optional
//	      "name": "NVIDIA A100 80GB PCIe",                // required
//	      "memory_mb": 81920,                             // required: framebuffer
//	      "mig_compute_slices": 7,                        // optional: checked at power-on
//	      "mig_memory_slices": 8,                         // optional: with mig_placements, the
//	                                                      //   MIG start slots are modelled
//	      "mig_mode": true                                // optional: MIG-backed types only (false:
//	    }],                                               //   time-sliced only; unset: both)
//	    "driver_loaded": true,                            // false: graphics type basic, no types
//	    "vgpu_types": ["grid_a100d-1-10c"],               // config.sharedPassthruGpuTypes
//	    "mig_placements": {                               // optional: vGPU type -> where its GPU
//	      "grid_a100d-1-10c": {"starts": [0, 1, 2, 3, 4, 5, 6], "size": 1}  // instance may
//	    },                                                //   start, memory slices it takes
//	    "host_state_dir": "/dir",                         // optional: <dir>/<name>.json, the
//	                                                      //   host's vGPUs at every change
//	    "graphics_type": "shared",                        // or "sharedDirect": active at start
//	    "assignment_policy": "performance",               // or "consolidation"
//	    "graphics_apply": "reboot",                       // or "immediate": when a new
//	                                                      //   graphics config takes effect
//	    "maintenance_mode": false,                        // in maintenance mode at start
//	    "reboot_seconds": 2,                              // optional, else -reboot-seconds
//	    "reboot_never_returns": false,                    // a reboot leaves it notResponding
//	    "lockdown_mode": "lockdownDisabled",              // or lockdownNormal/Strict: no root SSH
//	    "ssh_policy": "off",                              // TSM-SSH stops at boot (on: starts)
//	    "capability": {"rebootSupported": true},          // overrides of host capability flags
//	    "vgpu_capabilities": {"migrateSupported": true}   // overrides for every vGPU type
//	  }],
//	  "templates": [{                                     // optional (clones.go): VM templates
//	    "name": "ubuntu-2204-bios",                       // required, unique
//	    "host": "esxi-01.sim.miglab.test",                // optional, default the first host
//	    "firmware": "efi",                                // or "bios": what its guest boots with
//	    "guest_id": "ubuntu64Guest", "disk_gb": 16,       // optional
//	    "machine_id": "",                                 // its guest's machine-id; "": sealed
//	    "host_name": "ubuntu-2204-bios"                   // optional, default its name
//	  }],
//	  "guest_dhcp": "192.0.2.0/24"                        // optional: powered-on guests get a
//	}                                                     //   lease per machine-id (guest IP)
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/vmware/govmomi/object"
	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/types"
)

func main() {
	labFile := flag.String("lab", "", "lab file (JSON, see the top of main.go)")
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (port 0: a free port)")
	tlsCert := flag.String("tlscert", "", "TLS certificate (PEM); default: govmomi's test cert")
	tlsKey := flag.String("tlskey", "", "TLS key (PEM)")
	username := flag.String("username", "user", "login user name")
	password := flag.String("password", "pass", "login password (visible to ps: prefer -password-file)")
	passwordFile := flag.String("password-file", "", "file holding the login password (mode 0600)")
	delayJSON := flag.String("delay-json", "", `per-method latency in ms, {"CreateVM_Task": 1500}`)
	delayAll := flag.Int("delay", 0, "latency of every method, in ms")
	jitter := flag.Float64("delay-jitter", 0, "delay jitter (coefficient of variation)")
	rebootSeconds := flag.Float64("reboot-seconds", 2, "seconds a rebooting host stays away")
	watchStdin := flag.Bool("watch-stdin", false, "exit when standard input closes")
	trace := flag.Bool("trace", false, "write SOAP traffic to stderr")
	restUpstream := flag.String("rest-upstream", "",
		"serve /api/ from this server (http://127.0.0.1:PORT): the vSphere Automation API")
	flag.Parse()
	if *passwordFile != "" {
		// the password from a file: a command line is visible to every local user (ps)
		data, err := os.ReadFile(*passwordFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "miglab-vcsim: -password-file:", err)
			os.Exit(2)
		}
		*password = strings.TrimRight(string(data), "\r\n")
	}

	if err := run(*labFile, *listen, *tlsCert, *tlsKey, *username, *password, *delayJSON,
		*delayAll, *jitter, *rebootSeconds, *watchStdin, *trace, *restUpstream); err != nil {
		fmt.Fprintln(os.Stderr, "miglab-vcsim:", err)
		os.Exit(2)
	}
}

func run(labFile, listen, tlsCert, tlsKey, username, password, delayJSON string, delayAll int,
	jitter, rebootSeconds float64, watchStdin, trace bool, restUpstream string) error {
	if labFile == "" {
		return fmt.Errorf("-lab is required")
	}
	if username == "" || password == "" {
		return fmt.Errorf("-username and -password must not be empty")
	}
	lab, err := loadLab(labFile)
	if err != nil {
		return err
	}
	delays := map[string]int{}
	if delayJSON != "" {
		if err := json.Unmarshal([]byte(delayJSON), &delays); err != nil {
			return fmt.Errorf("-delay-json: %v", err)
		}
	}
	if rebootSeconds < 0 || delayAll < 0 || jitter < 0 {
		return fmt.Errorf("-reboot-seconds, -delay and -delay-jitter must not be negative")
	}
	var rest http.HandlerFunc
	if restUpstream != "" {
		if rest, err = restProxy(restUpstream); err != nil {
			return err
		}
	}

	// An empty vCenter (no stock inventory), API 7.0.3 or the lab's 8.0.x: pyVmomi reads 7.0
	// types (e.g. HostSharedGpuCapabilities, ComputeResource.lifecycleManaged) only from a
	// server that says so.
	m := simulator.VPX()
	m.Datacenter, m.Host, m.Cluster, m.ClusterHost = 0, 0, 0, 0
	m.Datastore, m.Machine, m.Portgroup, m.App, m.Pod, m.Folder = 0, 0, 0, 0, 0, 0
	m.Autostart = false
	vc := vcenterReleases[lab.VcenterVersion] // checked by loadLab
	about := &m.ServiceContent.About
	about.Version, about.ApiVersion, about.Build = vc.version, vc.apiVersion, vc.build
	about.FullName = "VMware vCenter Server " + vc.version + " build-" + vc.build
	about.LicenseProductVersion = majorMinor(vc.version)
	if err := m.Create(); err != nil {
		return err
	}
	dsDir, err := os.MkdirTemp("", "miglab-vcsim-ds-")
	if err != nil {
		return err
	}
	cleanup := func() { _ = os.RemoveAll(dsDir); m.Remove() }
	if err := buildInventory(m, lab, dsDir, rebootSeconds); err != nil {
		cleanup()
		return err
	}

	// Hooks and latency only now: building the inventory above went through the same service.
	simulator.MethodHook = hook
	simulator.MethodDone = done
	m.DelayConfig.Delay = delayAll
	m.DelayConfig.MethodDelay = delays
	m.DelayConfig.DelayJitter = jitter
	simulator.Trace = trace

	u := &url.URL{Host: listen, User: url.UserPassword(username, password)}
	m.Service.Listen = u
	m.Service.TLS = new(tls.Config)
	if tlsCert != "" || tlsKey != "" {
		cert, err := tls.LoadX509KeyPair(tlsCert, tlsKey)
		if err != nil {
			cleanup()
			return fmt.Errorf("-tlscert/-tlskey: %v", err)
		}
		m.Service.TLS.Certificates = []tls.Certificate{cert}
	}
	if rest != nil {
		// registered before NewServer, which adds it to the mux beside /sdk
		m.Service.HandleFunc("/api/", rest)
	}
	s := m.Service.NewServer()
	port, _ := strconv.Atoi(s.URL.Port())
	sdk := *s.URL
	sdk.User = nil
	line, _ := json.Marshal(map[string]interface{}{
		"url": sdk.String(), "port": port, "pid": os.Getpid(),
	})
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, string(line))
	if err := out.Flush(); err != nil {
		cleanup()
		return err
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	if watchStdin {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			stop <- syscall.SIGTERM
		}()
	}
	<-stop
	cleanup() // not s.Close(): it would wait for clients' long polls
	return nil
}

// buildInventory creates the lab's datacenter, cluster, hosts, datastore and network through the
// simulator's in-process client, then models each host's GPUs.
func buildInventory(m *simulator.Model, lab *Lab, dsDir string, rebootSeconds float64) error {
	ctx := context.Background()
	c, err := vim25.NewClient(ctx, m.Service)
	if err != nil {
		return err
	}
	dc, err := object.NewRootFolder(c).CreateDatacenter(ctx, lab.Datacenter)
	if err != nil {
		return fmt.Errorf("datacenter: %v", err)
	}
	folders, err := dc.Folders(ctx)
	if err != nil {
		return err
	}
	cluster, err := folders.HostFolder.CreateCluster(ctx, lab.Cluster, types.ClusterConfigSpecEx{})
	if err != nil {
		return fmt.Errorf("cluster: %v", err)
	}
	var hostRefs []types.ManagedObjectReference
	for _, lh := range lab.Hosts {
		task, err := cluster.AddHost(ctx, types.HostConnectSpec{HostName: lh.Name}, true, nil, nil)
		if err != nil {
			return fmt.Errorf("host %s: %v", lh.Name, err)
		}
		info, err := task.WaitForResult(ctx, nil)
		if err != nil {
			return fmt.Errorf("host %s: %v", lh.Name, err)
		}
		ref := info.Result.(types.ManagedObjectReference)
		hostRefs = append(hostRefs, ref)
		dss, err := object.NewHostSystem(c, ref).ConfigManager().DatastoreSystem(ctx)
		if err != nil {
			return err
		}
		if _, err := dss.CreateLocalDatastore(ctx, lab.Datastore, dsDir); err != nil {
			return fmt.Errorf("datastore on %s: %v", lh.Name, err)
		}
	}

	// The network: every datacenter starts with "VM Network"; rename it when asked.
	netFolder := simulator.Map.Get(folders.NetworkFolder.Reference()).(*simulator.Folder)
	for _, ref := range netFolder.ChildEntity {
		if n, ok := simulator.Map.Get(ref).(*mo.Network); ok && n.Name == "VM Network" {
			n.Name = lab.Network
			if n.Summary != nil {
				n.Summary.GetNetworkSummary().Name = lab.Network
			}
		}
	}

	if err := buildNetworks(ctx, c, lab, folders, hostRefs); err != nil {
		return err
	}

	var summary types.ComputeResourceSummary
	for i, ref := range hostRefs {
		h := simulator.Map.Get(ref).(*simulator.HostSystem)
		lh := &lab.Hosts[i]
		setupHost(h, lh, rebootSeconds)
		hw := h.Summary.Hardware
		summary.TotalCpu += int32(hw.CpuMhz) * int32(hw.NumCpuCores)
		summary.TotalMemory += hw.MemorySize
		summary.NumCpuCores += hw.NumCpuCores
		summary.NumCpuThreads += hw.NumCpuThreads
		summary.NumHosts++
		summary.NumEffectiveHosts++
	}
	summary.EffectiveCpu = summary.TotalCpu
	summary.EffectiveMemory = summary.TotalMemory >> 20
	summary.OverallStatus = types.ManagedEntityStatusGreen
	cr := simulator.Map.Get(cluster.Reference()).(*simulator.ClusterComputeResource)
	*cr.Summary.GetComputeResourceSummary() = summary
	// vSphere 7+: whether the cluster is managed by a single vLCM image (ComputeResource
	// .lifecycleManaged); false like a real vCenter's baseline-managed cluster.
	cr.LifecycleManaged = types.NewBool(lab.ClusterImageManaged)
	// The stock simulator's clusters have DRS on (and ignore the create spec); the lab says
	// (default off, as the seed's lone host): miglab reads drsConfig to decide what maintenance
	// mode can do (real-lab notes V4, V5). Nothing migrates VMs either way.
	if cfg, ok := cr.ConfigurationEx.(*types.ClusterConfigInfoEx); ok {
		cfg.DrsConfig.Enabled = types.NewBool(lab.Drs != "off")
		if lab.Drs != "off" {
			cfg.DrsConfig.DefaultVmBehavior = types.DrsBehavior(lab.Drs)
		}
	}
	// The lab's templates (real-lab notes V13, clones.go), on the lab's network.
	pool, err := cluster.ResourcePool(ctx)
	if err != nil {
		return err
	}
	var network types.ManagedObjectReference
	for _, ref := range netFolder.ChildEntity {
		if n, ok := simulator.Map.Get(ref).(*mo.Network); ok && n.Name == lab.Network {
			network = n.Self
		}
	}
	return createTemplates(ctx, c, lab, folders, pool, hostRefs, network)
}
