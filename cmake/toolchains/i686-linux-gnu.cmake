# Determinism matrix (docs/determinism.md): 32-bit x86 with Debian's g++-i686-linux-gnu, linked
# statically so it runs on an x86-64 kernel without an i386 multiarch libc.
# CMAKE_SYSTEM_PROCESSOR i686 plus 4-byte pointers make cmake/LockstepFlags.cmake add
# -msse2 -mfpmath=sse to the sim: the x87 FPU's 80-bit registers would round differently.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR i686)
set(CMAKE_C_COMPILER i686-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER i686-linux-gnu-g++)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_FIND_ROOT_PATH /usr/i686-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The host's /usr/include must not be searched (its libc headers are x86-64's): point
# XXHASH_INCLUDE_DIR at a folder that holds only xxhash.h (scripts/determinism-matrix.sh
# stages one in the build folder).
