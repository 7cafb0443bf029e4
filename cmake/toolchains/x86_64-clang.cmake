# Determinism matrix (docs/determinism.md): native x86-64, Debian's default clang++ (14 on
# Debian 12), baseline SSE2 ISA.
set(CMAKE_C_COMPILER clang)
set(CMAKE_CXX_COMPILER clang++)
