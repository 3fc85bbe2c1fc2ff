package main

import (
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// release is one vSphere release the simulator can play: the version, API version and build a
// real vCenter (ServiceContent.about) or ESXi host (config.product) reports.
type release struct {
	version, apiVersion, build, name string
}

// vCenter Server and ESXi GA builds (VMware's release notes: "vCenter Server 8.0 Update 3 |
// 25 JUN 2024 | GA ISO Build 24022515", "ESXi 8.0 Update 3 | 25 JUN 2024 | ISO Build 24022510";
// 7.0.3 keeps the simulator's earlier 7.0 U3d / U3c builds).
var (
	vcenterReleases = map[string]release{
		"7.0.3": {"7.0.3", "7.0.3.0", "19480866", "vCenter Server 7.0 Update 3d"},
		"8.0.0": {"8.0.0", "8.0.0.0", "20519528", "vCenter Server 8.0 GA"},
		"8.0.1": {"8.0.1", "8.0.1.0", "21560480", "vCenter Server 8.0 Update 1"},
		"8.0.2": {"8.0.2", "8.0.2.0", "22385739", "vCenter Server 8.0 Update 2"},
		"8.0.3": {"8.0.3", "8.0.3.0", "24022515", "vCenter Server 8.0 Update 3"},
	}
	esxiReleases = map[string]release{
		"7.0.3": {"7.0.3", "7.0.3.0", "19193900", "ESXi 7.0 Update 3c"},
		"8.0.0": {"8.0.0", "8.0.0.0", "20513097", "ESXi 8.0 GA"},
		"8.0.1": {"8.0.1", "8.0.1.0", "21495797", "ESXi 8.0 Update 1"},
		"8.0.2": {"8.0.2", "8.0.2.0", "22380479", "ESXi 8.0 Update 2"},
		"8.0.3": {"8.0.3", "8.0.3.0", "24022510", "ESXi 8.0 Update 3"},
	}
)

const defaultRelease = "7.0.3"

func knownReleases(m map[string]release) string {
	var names []string
	for v := range m {
		names = append(names, v)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// majorMinor is a release's licenseProductVersion: "8.0" for 8.0.3.
func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

// versionKey orders "8.0.3" after "7.0.3" (numeric parts).
func versionKey(v string) [3]int {
	var k [3]int
	for i, p := range strings.SplitN(v, ".", 3) {
		k[i], _ = strconv.Atoi(p)
	}
	return k
}

func versionNewer(a, b string) bool {
	ka, kb := versionKey(a), versionKey(b)
	for i := range ka {
		if ka[i] != kb[i] {
			return ka[i] > kb[i]
		}
	}
	return false
}

// checkVersions sets the defaults of vcenter_version and hosts[].esxi_version and reports
// unknown releases, and hosts newer than their vCenter (vCenter manages ESXi hosts of its own
// release and older: VMware's interoperability matrix; adding a newer host fails).
func checkVersions(lab *Lab, bad func(string, ...interface{})) {
	if lab.VcenterVersion == "" {
		lab.VcenterVersion = defaultRelease
	}
	if _, ok := vcenterReleases[lab.VcenterVersion]; !ok {
		bad("vcenter_version: %q is not a known release (%s)", lab.VcenterVersion,
			knownReleases(vcenterReleases))
	}
	for i := range lab.Hosts {
		h := &lab.Hosts[i]
		if h.EsxiVersion == "" {
			h.EsxiVersion = defaultRelease
		}
		if _, ok := esxiReleases[h.EsxiVersion]; !ok {
			bad("hosts[%d].esxi_version: %q is not a known release (%s)", i, h.EsxiVersion,
				knownReleases(esxiReleases))
		} else if versionNewer(h.EsxiVersion, lab.VcenterVersion) {
			bad("hosts[%d].esxi_version: ESXi %s is newer than vcenter_version %s: vCenter "+
				"cannot manage it (set vcenter_version)", i, h.EsxiVersion, lab.VcenterVersion)
		}
	}
}

// restProxy is the -rest-upstream handler: every request under /api/ goes to the upstream
// (plain HTTP on the loopback: miglab.sim's vLCM REST server) with path and query unchanged, so
// a client reaches https://<vcenter>/api/... on the simulator's own port and certificate, as a
// real vCenter serves SOAP (/sdk) and REST (/api) on one port.
func restProxy(upstream string) (http.HandlerFunc, error) {
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("-rest-upstream: %q is not an http://HOST:PORT URL", upstream)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	base := proxy.Director
	proxy.Director = func(r *http.Request) {
		host := r.Host
		base(r)
		r.Header.Set("X-Forwarded-Proto", "https")
		r.Header.Set("X-Forwarded-Host", host)
	}
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, `{"error_type": "SERVICE_UNAVAILABLE", "messages": [{"id": `+
			`"vapi.endpoint.unavailable", "default_message": %s, "args": []}]}`,
			strconv.Quote("the vSphere Automation API is not available: "+err.Error()))
	}
	return proxy.ServeHTTP, nil
}
