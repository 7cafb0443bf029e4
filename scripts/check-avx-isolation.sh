#!/usr/bin/env bash
# The AVX and AVX-512 copies of the contact solver's passes (sim/src/solver/contact_lanes_avx.cpp) run
# only on CPUs with those extensions; everything else in the sim library runs on every x86 CPU
# with SSE2. This checks the built library ($1, liblockstep_sim.a) by disassembly:
#   - no function outside contact_lanes_avx.cpp.o uses a VEX- or EVEX-encoded instruction;
#   - inside it, only functions of its own namespaces (wide_avx, avx_lanes, wide_avx512,
#     avx512_lanes) do (contact_lanes.cpp reaches them through the kLaneKernelAvx* tables): no
#     inline function of a shared header was emitted with AVX code, which the linker could pick
#     for a caller on a CPU without AVX;
#   - the AVX copy (wide_avx, avx_lanes) touches no AVX-512 state: no zmm or opmask
#     register, no ymm/xmm register above 15 (those need EVEX), so it runs on AVX-only CPUs.
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
    if (fn ~ /wide_avx512::|avx512_lanes::/) { avx512[fn] = 1; next }
    if (fn !~ /wide_avx::|avx_lanes::/) { bad[member " " fn] = 1; next }
    if ($0 ~ /%zmm|%k[0-7]|%[xy]mm(1[6-9]|2[0-9]|3[01])/) { evex[fn] = 1 }
    avx[fn] = 1
  }
  END {
    n = 0; for (f in bad) { print "check-avx-isolation: AVX instruction in " f; n++ }
    for (f in evex) { print "check-avx-isolation: AVX-512 register in the AVX copy: " f; n++ }
    m = 0; for (f in avx) m++
    m512 = 0; for (f in avx512) m512++
    if (n > 0) exit 1
    if (m == 0) { print "check-avx-isolation: no AVX code found in contact_lanes_avx.cpp.o"; exit 1 }
    printf "check-avx-isolation: %d functions use AVX (wide_avx, avx_lanes; no AVX-512 register) and %d AVX-512 (wide_avx512, avx512_lanes), all in contact_lanes_avx.cpp\n", m, m512
  }'
