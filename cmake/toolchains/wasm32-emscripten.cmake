# Determinism matrix (docs/determinism.md): wasm32 with Debian's emscripten, run under node.
# wasm has no fused multiply-add in its MVP instruction set and its float semantics are
# IEEE-754 binary32/binary64 with round-to-nearest, so it should agree with the native targets.
#
# Debian quirks: em++'s JS tools are found only with NODE_PATH=/usr/share/nodejs in the
# environment (set it when configuring and building), and the generated script must run as
# `node --no-experimental-fetch prog.js`.
# Emscripten's platform file reports CMAKE_SYSTEM_PROCESSOR x86 (with 4-byte pointers) for old
# projects' sake; name the real target so the 32-bit-x86 -msse2 -mfpmath=sse are not added.
set(EMSCRIPTEN_SYSTEM_PROCESSOR wasm32)
include(/usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake)
# libc++ 13 in Debian's emscripten lacks std::bit_cast; libcxx13-bit-cast.h supplies it.
# -msimd128: the sim's lane types use wasm SIMD (sim/src/simd/); every browser since 2021 and
# node 16.4+ run it. The f32x4 arithmetic is IEEE as the scalar one, so the bits are the same.
set(CMAKE_CXX_FLAGS_INIT "-msimd128 -include ${CMAKE_CURRENT_LIST_DIR}/libcxx13-bit-cast.h")
set(CMAKE_C_FLAGS_INIT "-msimd128")
# NODERAWFS: the program sees the real file system (scene files passed on the command line);
# EXIT_RUNTIME: stdout is flushed and the exit code is returned to the shell.
set(CMAKE_EXE_LINKER_FLAGS_INIT "-sALLOW_MEMORY_GROWTH=1 -sNODERAWFS=1 -sEXIT_RUNTIME=1")
set(CMAKE_CROSSCOMPILING_EMULATOR node --no-experimental-fetch CACHE STRING
    "Runs the generated .js under node" FORCE)
