#!/usr/bin/env bash
# The AVX copy of the contact solver's passes (sim/src/contact_lanes_avx.cpp) runs only on CPUs
# with AVX; everything else in the sim library runs on every x86 CPU with SSE2. This checks the
# built library ($1, liblockstep_sim.a) by disassembly:
#   - no function outside contact_lanes_avx.cpp.o uses a VEX-encoded (AVX) instruction;
#   - inside it, only functions of its own namespaces (wide_avx, avx_lanes) and the two entry
#     points (*_avx) do: no inline function of a shared header was emitted with AVX code, which
#     the linker could pick for a caller on a CPU without AVX.
# Exit 77 (skipped) when objdump is missing.
set -euo pipefail
lib=${1:?usage: check-avx-isolation.sh liblockstep_sim.a}
command -v objdump >/dev/null || { echo "check-avx-isolation: objdump not installed: skipped"; exit 77; }
objdump -d -C --no-show-raw-insn "$lib" | awk '
  /^In archive/ { next }
  /^[^ ]+\.o:/ { member = $1; sub(/:$/, "", member); next }
  /^[0-9a-f]+ <.*>:$/ { fn = $0; sub(/^[0-9a-f]+ </, "", fn); sub(/>:$/, "", fn); next }
  /\tv[a-z0-9]+[ \t]/ {
    if (member != "contact_lanes_avx.cpp.o") { bad[member " " fn] = 1; next }
    if (fn !~ /wide_avx::|avx_lanes::|_avx\(/) { bad[member " " fn] = 1 }
    avx[fn] = 1
  }
  END {
    n = 0; for (f in bad) { print "check-avx-isolation: AVX instruction in " f; n++ }
    m = 0; for (f in avx) m++
    if (n > 0) exit 1
    if (m == 0) { print "check-avx-isolation: no AVX code found in contact_lanes_avx.cpp.o"; exit 1 }
    printf "check-avx-isolation: %d functions use AVX, all in contact_lanes_avx.cpp (wide_avx, avx_lanes, *_avx)\n", m
  }'
