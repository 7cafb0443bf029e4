# Determinism matrix (docs/determinism.md): native x86-64 with a second clang, the newest in
# Debian 12's main archive (package clang-19), so a change in LLVM's optimiser is caught.
set(CMAKE_C_COMPILER clang-19)
set(CMAKE_CXX_COMPILER clang++-19)
