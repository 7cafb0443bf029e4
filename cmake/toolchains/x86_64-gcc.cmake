# Determinism matrix (docs/determinism.md): native x86-64, Debian's g++ (baseline SSE2 ISA).
set(CMAKE_C_COMPILER gcc)
set(CMAKE_CXX_COMPILER g++)
