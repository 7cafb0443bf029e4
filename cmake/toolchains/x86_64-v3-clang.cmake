# Determinism matrix (docs/determinism.md): x86-64-v3 (AVX2 + FMA) with clang++; see
# x86_64-v3-gcc.cmake for why.
set(CMAKE_C_COMPILER clang)
set(CMAKE_CXX_COMPILER clang++)
set(CMAKE_C_FLAGS_INIT "-march=x86-64-v3")
set(CMAKE_CXX_FLAGS_INIT "-march=x86-64-v3")
