#!/usr/bin/env bash
# Local S3-compatible object storage for development and tests: a throwaway one-node Ceph cluster
# (1 mon + 1 memstore OSD, no mgr, auth none, everything bound to 127.0.0.1) with radosgw in front.
#
#   scripts/object-storage.sh start  <dir>   start a fresh instance; the last stdout line is the endpoint JSON
#                                             (exit 10 instead of 0: another live process's instance, shared)
#   scripts/object-storage.sh stop   <dir>   stop the daemons recorded in <dir>/run/*.pid (no-op if none)
#   scripts/object-storage.sh status <dir>   print the endpoint JSON and exit 0 if the instance answers, else exit 1
#
# Everything lives under <dir>: ceph.conf, mon/ (mon store), run/*.pid + admin sockets, log/*.log and
# endpoint.json (mode 600: {"endpoint","region","accessKeyId","secretAccessKey"}). OSD data is in memory
# (memstore), so objects do not survive `stop`; `start` always wipes the previous cluster in <dir>.
# Only stdout's last line is machine output; all progress and diagnostics go to stderr.
#
# Ports: the mon and radosgw ports are picked at random among free 127.0.0.1 ports (20000-31999), so a dev
# instance and any number of test-run instances coexist. Override with RGW_PORT / MON_PORT. The OSD takes
# its own free ports from Ceph's default range (6800-7300).
#
# Environment:
#   RGW_PORT, MON_PORT                 fixed ports instead of random free ones; they serve one instance, and
#                                      `svc start all` runs two (listings, uploads): one in use is refused by name
#   OBJECT_STORAGE_START_TIMEOUT       seconds to wait for radosgw to answer HTTP (default 120)
#   OBJECT_STORAGE_OWNER_PID           if set, a watchdog stops the instance once that process is gone, so a
#                                      killed test runner or dev server never leaks daemons
#   OBJECT_STORAGE_MEMSTORE_BYTES      OSD memstore capacity (default 2 GiB; memory is only used as filled)
#   OBJECT_STORAGE_RGW_DEBUG           radosgw log level (default 0; 1 logs every request to log/client.rgw.a.log)
#
# `start` on a <dir> whose instance still runs for a live owner (its watchdog is alive: the process that
# started it with OBJECT_STORAGE_OWNER_PID has not ended) shares it: it prints that instance's endpoint JSON
# and exits 10, and the caller must not stop it (a second `svc start` on the same data folder, as it shares
# the embedded Postgres). An instance without a live owner (left by a killed process) is stopped first
# and started afresh. Starts on one <dir> run one at a time (a lock on <dir>/.start.lock): of two at the
# same moment, the second waits for the first and then shares its instance.
#
# radosgw (Ceph 16 "pacific" on Debian 12) enforces SigV4 (header and presigned query), conditional
# writes (If-None-Match: * / If-Match on PUT), multipart uploads, bucket CORS. STS is enabled too
# (`rgw s3 auth use sts` + a random `rgw sts key`), so AssumeRole works once a role exists; the generated
# user carries the `roles=*` and `user-policy=*` caps so it can create one through the IAM API.
#
# Time (2-core VM): start 1.3-1.8 s, stop 1.3 s. Two settings make that possible: the OSD adds itself
# to the CRUSH map on boot, and the mon commits map changes every 50 ms instead of every second (with the
# defaults the same start took 15 s, mostly radosgw creating its pools one osdmap epoch at a time).
#
# The daemons run as the invoking user (root works: no --setuser/--setgroup, all paths are under <dir>).
# `stop` kills only PIDs recorded under <dir>/run whose command line names <dir>/ceph.conf: radosgw first
# (it hangs on SIGTERM once mon/osd are gone: SIGKILL after 1 s), then the OSD, then the mon; each is
# SIGKILLed if it outlives its grace period. A stop takes about 1.5 s.
set -euo pipefail -o errtrace

PROG=object-storage
log() { printf '[%s] %s\n' "$PROG" "$*" >&2; }
die() { log "error: $*"; exit 1; }
usage() {
  echo "usage: $0 start|stop|status <dir>" >&2
  exit 2
}

CMD=${1:-}
[ $# -eq 2 ] || usage
case "$CMD" in start | stop | status) ;; *) usage ;; esac
# Ceph's configuration parser aborts (an assertion in boost::spirit) on a byte outside printable ASCII
# in a path, and reads `#` and `;` (comments) and `\` (an escape) in one as its own syntax: tried, each
# failed the start; spaces, quotes, ( ) [ ] { } & ! % $ = did not. Checked before anything is created.
ceph_readable() {
  local LC_ALL=C
  [[ $1 != *[!\ -~]* && $1 != *[\#\;\\]* ]]
}
if [ "$CMD" = start ]; then
  asked=$2
  [[ $asked == /* ]] || asked=$PWD/$asked
  ceph_readable "$asked" || die "the folder's path $asked holds characters Ceph cannot read (outside printable ASCII, or # ; \\): choose another (OBJECT_STORAGE_DIR)"
fi
if [ ! -d "$2" ]; then
  case "$CMD" in
    start) mkdir -p "$2" ;;
    stop) exit 0 ;; # nothing was ever started there
    status) echo "[$PROG] not running (no directory $2)" >&2 && exit 1 ;;
  esac
fi
D=$(cd "$2" && pwd -P)
[ "$CMD" != start ] || ceph_readable "$D" ||
  die "the folder's path $D holds characters Ceph cannot read (outside printable ASCII, or # ; \\): choose another (OBJECT_STORAGE_DIR)"
RUN=$D/run
LOGDIR=$D/log
CONF=$D/ceph.conf
START_TIMEOUT=${OBJECT_STORAGE_START_TIMEOUT:-120}
MEMSTORE_BYTES=${OBJECT_STORAGE_MEMSTORE_BYTES:-2147483648}
RGW_DEBUG=${OBJECT_STORAGE_RGW_DEBUG:-0}
REGION=us-east-1

# --- process helpers -----------------------------------------------------------------------------------

# pid_of NAME: the pid recorded in run/NAME.pid if that process is alive and is ours: one argument of its
# command line is exactly our ceph.conf (daemons) or our directory (watchdog), so a recycled pid, or a
# daemon of an instance in another directory, is never touched.
pid_of() {
  local f=$RUN/$1.pid pid want=$CONF
  [ "$1" = watchdog ] && want=$D
  [ -s "$f" ] || return 1
  pid=$(tr -dc '0-9' <"$f")
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  local args=() arg
  mapfile -d '' -t args <"/proc/$pid/cmdline" 2>/dev/null || return 1
  for arg in "${args[@]}"; do
    [ "$arg" = "$want" ] && { echo "$pid"; return 0; }
  done
  return 1
}

alive() { [ -d "/proc/$1" ] && ! grep -qs '^State:[[:space:]]*Z' "/proc/$1/status"; }

# live_owner: the pid of the process this instance's watchdog waits on, if both are alive (the watchdog
# stops the instance within 2 s of its owner's end: an instance whose owner just died is not shared)
live_owner() {
  local wd args=() i
  wd=$(pid_of watchdog) || return 1
  mapfile -d '' -t args <"/proc/$wd/cmdline" 2>/dev/null || return 1
  for ((i = 0; i < ${#args[@]} - 1; i++)); do
    if [ "${args[i]}" = object-storage-watchdog ] && alive "${args[i + 1]}"; then
      echo "${args[i + 1]}"
      return 0
    fi
  done
  return 1
}

# stop_daemon NAME GRACE_SECONDS: SIGTERM, wait up to GRACE, then SIGKILL and wait until gone.
stop_daemon() {
  local name=$1 grace=$2 pid i
  if pid=$(pid_of "$name"); then
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then
      log "$name did not exit after ${grace}s, sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do alive "$pid" || break; sleep 0.1; done
    fi
  fi
  rm -f "$RUN/$name.pid"
}

do_stop() {
  # the watchdog calls `stop` itself: never kill the process that is running this stop
  local wd
  if wd=$(pid_of watchdog) && [ "$wd" != "${OBJECT_STORAGE_WATCHDOG_SELF:-}" ]; then
    kill -TERM "$wd" 2>/dev/null || true
  fi
  rm -f "$RUN/watchdog.pid"
  # radosgw first: it hangs on SIGTERM once mon/osd are gone, and even with them up a graceful stop
  # waits ~5 s for its background threads; it keeps no state of its own, so 1 s grace, then SIGKILL
  stop_daemon rgw 1
  stop_daemon osd 10
  stop_daemon mon 10
  rm -f "$D/endpoint.json" "$RUN"/*.asok
}

# --- HTTP / port helpers -------------------------------------------------------------------------------

port_in_use() { timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# http_answers PORT: radosgw answers any HTTP status (anonymous GET / is 200 with an empty bucket list)
http_answers() {
  if command -v curl >/dev/null; then
    local code
    code=$(curl -s -o /dev/null -m 3 -w '%{http_code}' "http://127.0.0.1:$1/" 2>/dev/null) || true
    [ -n "$code" ] && [ "$code" != 000 ]
  else
    timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1 && printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3 &&
      IFS= read -r line <&3 && [[ \$line == HTTP/* ]]" 2>/dev/null
  fi
}

pick_port() { # pick_port EXCLUDED...: a random port on 127.0.0.1 that nothing listens on
  local p i
  for ((i = 0; i < 200; i++)); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
    case " $* " in *" $p "*) continue ;; esac
    port_in_use "$p" || { echo "$p"; return 0; }
  done
  die "no free port found"
}

rand_chars() { # rand_chars SET N
  local out=""
  while [ ${#out} -lt "$2" ]; do out+=$(head -c 512 /dev/urandom | LC_ALL=C tr -dc "$1"); done
  printf '%s' "${out:0:$2}"
}

new_uuid() { cat /proc/sys/kernel/random/uuid; }

endpoint_json() {
  cat "$D/endpoint.json"
}

# --- status --------------------------------------------------------------------------------------------

do_status() {
  local n port
  for n in mon osd rgw; do pid_of "$n" >/dev/null || { log "not running ($n is down) in $D"; return 1; }; done
  [ -s "$D/endpoint.json" ] || { log "no endpoint.json in $D"; return 1; }
  port=$(sed -n 's/.*"endpoint":"http:\/\/127\.0\.0\.1:\([0-9]*\)".*/\1/p' "$D/endpoint.json")
  http_answers "$port" || { log "radosgw on port $port does not answer"; return 1; }
  endpoint_json
}

# --- start ---------------------------------------------------------------------------------------------

STEP_LOG=()
on_error() { # runs inside the start attempt's subshell: show the relevant logs, the caller cleans up
  local rc=$? line=$1 f
  trap - ERR
  log "start failed (exit $rc at line $line)"
  # the one cause worth a line of its own: the daemons' logs bury it under statistics
  if grep -qs "No space left on device" "${STEP_LOG[@]}" /dev/null; then
    log "the disk holding $D is full: free some space or choose another folder (OBJECT_STORAGE_DIR)"
  elif [ -n "$(df -P "$D" 2>/dev/null | awk 'NR == 2 && $4 < 65536')" ]; then
    log "the disk holding $D has less than 64 MB free, which may be why: free some space or choose another folder (OBJECT_STORAGE_DIR)"
  fi
  for f in "${STEP_LOG[@]}"; do
    if [ -s "$f" ]; then
      log "---- last lines of $f ----"
      tail -n 30 "$f" >&2 || true
    fi
  done
  exit "$rc"
}

write_conf() {
  cat >"$CONF" <<EOF
# generated by scripts/object-storage.sh — a throwaway one-node cluster, do not reuse
[global]
fsid = $FSID
mon host = v2:127.0.0.1:$MON_PORT
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind msgr1 = false
ms bind ipv6 = false
ms bind retry delay = 1
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms client mode = crc
ms mon service mode = crc
ms service mode = crc
ms cluster mode = crc
ms mon cluster mode = crc
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
# a nearly full dev disk must not make the mon shut itself down
mon data avail crit = 0
mon data avail warn = 0
osd crush chooseleaf type = 0
# a fresh tiny cluster has nothing to batch: commit map changes (pool creation, OSD boot) at once
# instead of once a second (start: 1.5 s instead of 15 s)
paxos propose interval = 0.05
paxos min wait = 0.01
run dir = $RUN
admin socket = $RUN/\$name.asok
log file = $LOGDIR/\$name.log
log to stderr = false
err to stderr = true
keyring = $D/keyring
[mon]
mon data = $D/mon/\$id
pid file = $RUN/mon.pid
[osd]
osd data = $D/osd/\$id
# the OSD places itself in the CRUSH map when it boots (no "ceph osd crush add" round trips)
osd crush update on start = true
crush location = root=default host=localhost
pid file = $RUN/osd.pid
osd objectstore = memstore
memstore device bytes = $MEMSTORE_BYTES
osd max object name len = 460
osd max object namespace len = 64
[client.rgw.a]
pid file = $RUN/rgw.pid
rgw frontends = beast endpoint=127.0.0.1:$RGW_PORT
rgw data = $D/rgw
rgw dns name =
rgw enable usage log = false
# level 1 logs every request (3 lines each); errors are logged at any level
debug rgw = $RGW_DEBUG/5
# STS (AssumeRole, AssumeRoleWithWebIdentity) on the S3 endpoint; the key encrypts session tokens
rgw s3 auth use sts = true
rgw sts key = $STS_KEY
EOF
}

start_once() {
  STEP_LOG=()
  rm -rf "$D/mon" "$D/osd" "$D/rgw" "$RUN" "$LOGDIR" "$CONF" "$D/keyring" "$D/monmap" "$D/endpoint.json"
  mkdir -p "$D/mon/a" "$D/osd/0" "$D/rgw" "$RUN" "$LOGDIR"

  FSID=$(new_uuid)
  STS_KEY=$(rand_chars 'a-f0-9' 16)
  MON_PORT=${MON_PORT_FIXED:-$(pick_port)}
  RGW_PORT=${RGW_PORT_FIXED:-$(pick_port "$MON_PORT")}
  # a fixed port serves one instance: `svc start all` starts one per service that stores objects
  # (listings and uploads), and the second one's monitor failed to bind with Ceph's words only
  local fixed
  for fixed in "MON_PORT ${MON_PORT_FIXED:-}" "RGW_PORT ${RGW_PORT_FIXED:-}"; do
    set -- $fixed
    [ -n "${2:-}" ] && port_in_use "$2" &&
      die "$1=$2 is in use: a fixed port serves one instance (svc start all runs one for listings and one for uploads); unset $1 for a free port"
  done
  write_conf
  local C=(-c "$CONF")

  log "mon on 127.0.0.1:$MON_PORT, radosgw on 127.0.0.1:$RGW_PORT, dir $D"
  STEP_LOG=("$LOGDIR/mon.a.log" "$LOGDIR/mon.out")
  timeout 30 ceph-authtool --create-keyring "$D/keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  timeout 30 monmaptool --create --addv a "[v2:127.0.0.1:$MON_PORT]" --fsid "$FSID" "$D/monmap" >/dev/null
  timeout 60 ceph-mon "${C[@]}" --mkfs -i a --monmap "$D/monmap" --keyring "$D/keyring" </dev/null >>"$LOGDIR/mon.out" 2>&1
  timeout 30 ceph-mon "${C[@]}" -i a </dev/null >>"$LOGDIR/mon.out" 2>&1 # daemonizes, pid in run/mon.pid
  pid_of mon >/dev/null

  STEP_LOG=("$LOGDIR/osd.0.log" "$LOGDIR/osd.out" "$LOGDIR/mon.a.log")
  local osd_uuid
  osd_uuid=$(new_uuid)
  timeout 60 ceph "${C[@]}" --connect-timeout 50 osd new "$osd_uuid" >/dev/null 2>>"$LOGDIR/osd.out"
  timeout 60 ceph-osd "${C[@]}" -i 0 --mkfs --osd-uuid "$osd_uuid" </dev/null >>"$LOGDIR/osd.out" 2>&1
  timeout 30 ceph-osd "${C[@]}" -i 0 </dev/null >>"$LOGDIR/osd.out" 2>&1 # daemonizes, pid in run/osd.pid
  pid_of osd >/dev/null

  STEP_LOG=("$LOGDIR/client.rgw.a.log" "$LOGDIR/rgw.out")
  timeout 30 radosgw "${C[@]}" -n client.rgw.a </dev/null >>"$LOGDIR/rgw.out" 2>&1 # daemonizes, pid in run/rgw.pid
  local i rgw_pid
  # radosgw daemonizes with daemon(3) (unlike mon/osd, its parent does not wait for the child), so its
  # pid file appears a moment after the command returns
  for ((i = 0; i < 50; i++)); do rgw_pid=$(pid_of rgw) && break; sleep 0.1; done
  [ -n "${rgw_pid:-}" ] || { log "radosgw did not start (no live pid in $RUN/rgw.pid)"; return 1; }
  for ((i = 0; i < START_TIMEOUT * 5; i++)); do
    alive "$rgw_pid" || { log "radosgw exited during start"; return 1; }
    http_answers "$RGW_PORT" && break
    sleep 0.2
  done
  http_answers "$RGW_PORT" || { log "radosgw (pid $rgw_pid) did not answer within ${START_TIMEOUT}s"; return 1; }

  ACCESS_KEY=$(rand_chars 'A-Z0-9' 20)
  SECRET_KEY=$(rand_chars 'A-Za-z0-9' 40)
  timeout 60 radosgw-admin "${C[@]}" -n client.admin user create --uid=svc-dev --display-name="svc local object storage" \
    --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >/dev/null 2>>"$LOGDIR/rgw.out"
  timeout 60 radosgw-admin "${C[@]}" -n client.admin caps add --uid=svc-dev \
    --caps="roles=*;user-policy=*" >/dev/null 2>>"$LOGDIR/rgw.out"

  (
    umask 077
    printf '{"endpoint":"http://127.0.0.1:%s","region":"%s","accessKeyId":"%s","secretAccessKey":"%s"}\n' \
      "$RGW_PORT" "$REGION" "$ACCESS_KEY" "$SECRET_KEY" >"$D/endpoint.json.tmp"
  )
  chmod 600 "$D/endpoint.json.tmp"
  mv "$D/endpoint.json.tmp" "$D/endpoint.json"
}

start_watchdog() {
  local owner=$1
  # a detached loop that stops this instance once the owner process is gone
  # (/proc, not kill -0: as a non-root user kill -0 fails with EPERM on another user's live process)
  setsid bash -c '
    export OBJECT_STORAGE_WATCHDOG_SELF=$$
    echo $$ > "$3/run/watchdog.pid"
    while [ -d "/proc/$1" ]; do sleep 2; done
    exec "$2" stop "$3"
  ' object-storage-watchdog "$owner" "$(cd "$(dirname "$0")" && pwd -P)/$(basename "$0")" "$D" \
    </dev/null >>"$LOGDIR/watchdog.out" 2>&1 9>&- &
  local i
  for ((i = 0; i < 50; i++)); do [ -s "$RUN/watchdog.pid" ] && break; sleep 0.1; done
}

do_start() {
  local b missing=()
  for b in ceph-mon ceph-osd radosgw radosgw-admin ceph ceph-authtool monmaptool; do
    command -v "$b" >/dev/null || missing+=("$b")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    log "not installed: ${missing[*]} (run scripts/install-object-storage.sh as root)"
    exit 3
  fi
  local owner i
  if owner=$(live_owner); then
    # a live owner's instance whose daemons all run is shared, given time to answer (a busy machine
    # can keep radosgw from answering within one status probe), never stopped under its owner
    for ((i = 0; i < 20; i++)); do
      if do_status >/dev/null 2>&1; then
        log "an instance is already running in $D for process $owner: sharing it"
        endpoint_json
        exit 10
      fi
      pid_of mon >/dev/null && pid_of osd >/dev/null && pid_of rgw >/dev/null || break
      sleep 1
    done
  fi
  if pid_of mon >/dev/null || pid_of osd >/dev/null || pid_of rgw >/dev/null; then
    log "an instance is already running in $D: stopping it first"
    do_stop
  fi
  MON_PORT_FIXED=${MON_PORT:-}
  RGW_PORT_FIXED=${RGW_PORT:-}
  local t0 attempt rc
  t0=$(date +%s%N)
  for attempt in 1 2 3; do
    # each attempt runs in a subshell with errexit on (not inside `if`, where bash would ignore it)
    set +e
    (
      set -e
      trap 'on_error $LINENO' ERR
      start_once
    ) 9>&- # the daemons it starts must not hold the start lock
    rc=$?
    set -e
    [ "$rc" -eq 0 ] && break
    do_stop >/dev/null 2>&1 || true
    # a port taken between the probe and the bind: retry with fresh ports unless they are pinned
    if [ -z "$MON_PORT_FIXED$RGW_PORT_FIXED" ] && [ "$attempt" -lt 3 ] &&
      grep -qsiE 'address already in use|unable to bind|failed to bind' "$LOGDIR"/*; then
      log "port clash, retrying with other ports"
      continue
    fi
    # a pinned port taken after the probe above: two instances started at once (svc start all) both
    # found it free, and the second's daemon failed with Ceph's words only
    if [ -n "$MON_PORT_FIXED$RGW_PORT_FIXED" ] &&
      grep -qsiE 'address already in use|unable to bind|failed to bind' "$LOGDIR"/*; then
      local pinned=${MON_PORT_FIXED:+MON_PORT=$MON_PORT_FIXED}
      [ -n "$RGW_PORT_FIXED" ] && pinned="${pinned:+$pinned or }RGW_PORT=$RGW_PORT_FIXED"
      die "$pinned is in use: a fixed port serves one instance (svc start all runs one for listings and one for uploads); unset it for a free port"
    fi
    log "giving up; logs are in $LOGDIR"
    exit 1
  done
  local owner=${OBJECT_STORAGE_OWNER_PID:-}
  if [ -n "$owner" ]; then
    if [[ $owner =~ ^[0-9]+$ ]] && [ -d "/proc/$owner" ]; then
      start_watchdog "$owner"
    else
      log "warning: OBJECT_STORAGE_OWNER_PID=$owner is not a running process: no watchdog"
    fi
  fi
  log "ready in $((($(date +%s%N) - t0) / 1000000)) ms (mon pid $(pid_of mon), osd pid $(pid_of osd), rgw pid $(pid_of rgw))"
  endpoint_json
}

case "$CMD" in
  start)
    # One start at a time per folder: two `svc start`s a moment apart both found no instance, both
    # started one in the same folder, and both failed (an outside sweep). The second now waits, then
    # shares the first's instance (exit 10). Only this script holds the lock's descriptor (the daemons
    # and the watchdog are started without it), so any end of it, a kill -9 too, releases the lock.
    exec 9>"$D/.start.lock"
    flock -w $((START_TIMEOUT * 3)) 9 || die "another start in $D did not finish within $((START_TIMEOUT * 3)) s"
    do_start
    ;;
  stop) do_stop ;;
  status) do_status ;;
esac
