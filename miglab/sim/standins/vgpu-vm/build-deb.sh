#!/usr/bin/env bash
# Builds the STAND-IN of a VM's kernel with an NVIDIA vGPU for the miglab tests:
#   build-deb.sh OUT_DIR  -> OUT_DIR/miglab-standin-vgpu-vm_1.0-1_all.deb
# Installed in a test guest (a systemd container) it makes that guest behave like a fresh VM with
# a vGPU: nouveau bound at boot until blacklisted in the initramfs too, the NVIDIA module loaded
# only without nouveau and in use while a process holds /dev/nvidia* (see vm-kernel). The
# container needs a restart policy (podman --restart=always) so that a reboot brings it back.
# Built with dpkg-deb, byte-identical for the same sources.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
OUT=$1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SOURCE_DATE_EPOCH=1767225600
mkdir -p "$OUT"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/pkg
install -D -m 0755 "$HERE/vm-kernel" "$root/usr/lib/miglab-standin/vm-kernel"
install -D -m 0644 "$HERE/miglab-standin-kernel.service" \
  "$root/usr/lib/systemd/system/miglab-standin-kernel.service"
mkdir -p "$root/usr/local/sbin" "$root/etc/miglab-standin" "$root/DEBIAN"
for tool in lsmod modprobe rmmod update-initramfs miglab-standin-kernel; do
  ln -s ../../lib/miglab-standin/vm-kernel "$root/usr/local/sbin/$tool"
done
printf '{"gpu": true, "description": "a VM with one NVIDIA vGPU (miglab STAND-IN)"}\n' \
  >"$root/etc/miglab-standin/vgpu-vm.json"
echo /etc/miglab-standin/vgpu-vm.json >"$root/DEBIAN/conffiles"
cat >"$root/DEBIAN/control" <<CONTROL
Package: miglab-standin-vgpu-vm
Version: 1.0-1
Architecture: all
Maintainer: miglab tests <miglab@example.invalid>
Depends: python3, systemd
Section: utils
Priority: optional
Description: STAND-IN of a VM kernel with an NVIDIA vGPU (miglab tests)
 nouveau bound at boot, the NVIDIA module's load and use count, lsmod, modprobe, rmmod and
 update-initramfs for it. Built by miglab/sim/standins/vgpu-vm/build-deb.sh.
CONTROL
# As at a VM's first boot: the distribution's initramfs (no blacklist) and nouveau bound now.
cat >"$root/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ "$1" = configure ]; then
  systemctl enable miglab-standin-kernel.service >/dev/null 2>&1 || true
  [ -d /run/miglab-standin-kernel ] || /usr/lib/miglab-standin/vm-kernel boot
fi
POSTINST
chmod 0755 "$root/DEBIAN/postinst"
find "$root" -exec touch -h -d @"$SOURCE_DATE_EPOCH" {} +
dpkg-deb --root-owner-group -Zgzip --build "$root" "$OUT/miglab-standin-vgpu-vm_1.0-1_all.deb" >/dev/null
echo "$OUT/miglab-standin-vgpu-vm_1.0-1_all.deb"
