# Determinism matrix (docs/determinism.md): 64-bit Arm with Debian's g++-aarch64-linux-gnu,
# linked statically and run under qemu-aarch64 (package qemu-user). aarch64 has fused
# multiply-add in its base ISA and gcc contracts to it by default, so this target is where a
# missing -ffp-contract=off shows first.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# As for i686: XXHASH_INCLUDE_DIR must name a folder with xxhash.h and none of the host's
# headers.
