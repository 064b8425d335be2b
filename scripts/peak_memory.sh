#!/usr/bin/env bash
# The resident size of one program over its run: VmRSS and VmHWM (its peak so
# far) read from /proc every INTERVAL seconds (default 5), one line each to
# OUT, and the peak printed at the end. The program's own output goes to
# OUT.log. Exits with the program's status.
#
#   scripts/peak_memory.sh OUT -- build/bin/rnnsearch --norm rmsnorm ... --stop-after 800
set -euo pipefail
out=${1:?usage: scripts/peak_memory.sh OUT -- COMMAND ...}
shift
[ "${1:-}" = -- ] && shift
[ $# -gt 0 ] || { echo "usage: scripts/peak_memory.sh OUT -- COMMAND ..." >&2; exit 2; }
interval=${INTERVAL:-5}
"$@" >"$out.log" 2>&1 &
pid=$!
start=$(date +%s)
echo "seconds rss_mb hwm_mb" >"$out"
peak=0
while kill -0 "$pid" 2>/dev/null; do
  # Read both lines at once; the process may end between two reads.
  if status=$(cat "/proc/$pid/status" 2>/dev/null); then
    rss=$(awk '/^VmRSS:/ {print int($2 / 1024)}' <<<"$status")
    hwm=$(awk '/^VmHWM:/ {print int($2 / 1024)}' <<<"$status")
    if [ -n "$hwm" ]; then
      echo "$(($(date +%s) - start)) $rss $hwm" >>"$out"
      [ "$hwm" -gt "$peak" ] && peak=$hwm
    fi
  fi
  sleep "$interval"
done
status=0
wait "$pid" || status=$?
echo "peak resident: $peak MB (VmHWM, sampled every ${interval} s; the program exited with $status)"
exit "$status"
