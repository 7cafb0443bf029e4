# Determinism matrix (docs/determinism.md): x86-64-v3 (AVX2 + FMA) with g++. The compiler may
# use FMA instructions here, so a matching hash proves that -ffp-contract=off holds and no
# contraction sneaks into the sim.
set(CMAKE_C_COMPILER gcc)
set(CMAKE_CXX_COMPILER g++)
set(CMAKE_C_FLAGS_INIT "-march=x86-64-v3")
set(CMAKE_CXX_FLAGS_INIT "-march=x86-64-v3")
