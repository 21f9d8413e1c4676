#!/usr/bin/env bash
# Installs the browser the real-browser tests and `npm run bench:blob-browser` drive through playwright-core:
# Debian's own Chromium at /usr/bin/chromium. Never a downloaded browser (playwright's `install` is not
# used): the distribution package gets security updates and needs no network access at test time.
# Idempotent: does nothing when /usr/bin/chromium is present. Needs root (or passwordless sudo) only when
# something is missing. CI calls it before the tests.
set -euo pipefail

log() { printf '[install-browser] %s\n' "$*" >&2; }

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
  log "chromium is installed ($("$CHROMIUM" --version 2>/dev/null | head -n 1 || echo 'version unknown'))"
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  log "error: installing chromium needs root. Run as root: apt-get update && apt-get install -y --no-install-recommends chromium"
  exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
  log "error: no apt-get on this system; install Chromium so that $CHROMIUM exists"
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
log "apt-get install chromium"
timeout 600 "${SUDO[@]}" apt-get update -q
timeout 1200 "${SUDO[@]}" apt-get install -y -q --no-install-recommends chromium

[ -x "$CHROMIUM" ] || { log "error: $CHROMIUM is still missing after the install"; exit 1; }
log "installed: $("$CHROMIUM" --version 2>/dev/null | head -n 1)"
