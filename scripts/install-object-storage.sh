#!/usr/bin/env bash
# Installs what scripts/object-storage.sh needs to run local object storage (Ceph radosgw on a one-node
# throwaway cluster) on Debian 12 / Ubuntu. Idempotent: does nothing when every command is present.
# Needs root (or passwordless sudo) only when something is missing. CI calls it before the tests.
#
#   radosgw    radosgw            (pulls in ceph-common: ceph, radosgw-admin, ceph-authtool)
#   ceph-mon   ceph-mon           (pulls in ceph-base: monmaptool)
#   ceph-osd   ceph-osd
#   curl       curl               (readiness probe; the script falls back to bash /dev/tcp without it)
#   timeout    coreutils, setsid  util-linux   (both in every Debian base image; listed for slim images)
# Nothing else: UUIDs come from /proc, random keys from /dev/urandom, no procps/uuid-runtime/openssl.
set -euo pipefail

log() { printf '[install-object-storage] %s\n' "$*" >&2; }

declare -A PKG_OF=(
  [radosgw]=radosgw
  [radosgw-admin]=ceph-common
  [ceph]=ceph-common
  [ceph-authtool]=ceph-common
  [ceph-mon]=ceph-mon
  [monmaptool]=ceph-base
  [ceph-osd]=ceph-osd
  [curl]=curl
  [timeout]=coreutils
  [setsid]=util-linux
)

missing_pkgs=()
for cmd in "${!PKG_OF[@]}"; do
  if ! command -v "$cmd" >/dev/null 2>&1; then
    pkg=${PKG_OF[$cmd]}
    case " ${missing_pkgs[*]:-} " in *" $pkg "*) ;; *) missing_pkgs+=("$pkg") ;; esac
  fi
done

if [ ${#missing_pkgs[@]} -eq 0 ]; then
  log "radosgw, ceph-mon and ceph-osd are installed ($(radosgw --version 2>/dev/null | head -n 1 || echo 'version unknown'))"
  exit 0
fi

# Always ask for the three daemons together so their versions match.
pkgs=(radosgw ceph-mon ceph-osd "${missing_pkgs[@]}")
mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
log "missing packages: ${missing_pkgs[*]}"

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  log "error: installing ${pkgs[*]} needs root. Run as root: apt-get update && apt-get install -y --no-install-recommends ${pkgs[*]}"
  log "(without radosgw the suite falls back to s3rver, which enforces neither signatures nor conditional writes)"
  exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
  log "error: no apt-get on this system; install the Ceph packages ${pkgs[*]} with your package manager"
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
log "apt-get install ${pkgs[*]}"
timeout 600 "${SUDO[@]}" apt-get update -q
timeout 1200 "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${pkgs[@]}"

for cmd in "${!PKG_OF[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || { log "error: $cmd is still missing after the install"; exit 1; }
done
log "installed: $(radosgw --version | head -n 1)"
