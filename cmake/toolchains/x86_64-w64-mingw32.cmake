# Determinism matrix (docs/determinism.md): 64-bit Windows, built by Debian's mingw-w64 cross
# compiler (the posix thread model: std::thread and std::mutex, which the client SDK needs) and
# run under Debian's wine. Linked statically (libstdc++, libgcc, winpthread) so that a bare wine
# prefix runs the programs without any DLL of ours beside them.
# x86-64 has SSE2 as its baseline: the sim's float code is the same SSE2 as on Linux x86-64, and
# -ffp-contract=off comes with the sim target as everywhere.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR AMD64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-static")
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
