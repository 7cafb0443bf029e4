# Compiler flags shared by every lockstep target.
#
# Determinism flags (docs/determinism.md) are attached to the sim target as PUBLIC options in
# sim/CMakeLists.txt, so that every consumer that inlines sim headers compiles them the same way.

# Warnings for a target of ours; -Wconversion is added for sim on top of these.
function(lockstep_warnings target)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow)
    if(LOCKSTEP_WARNINGS_AS_ERRORS)
      target_compile_options(${target} PRIVATE -Werror)
    endif()
  endif()
endfunction()

# True on 32-bit x86, where the x87 FPU must be avoided (-msse2 -mfpmath=sse).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(i.86|x86|X86|x86_64|AMD64|amd64)$" AND CMAKE_SIZEOF_VOID_P EQUAL 4)
  set(LOCKSTEP_X86_32 ON)
else()
  set(LOCKSTEP_X86_32 OFF)
endif()

# xxHash is used header-only (XXH_INLINE_ALL), so cross and wasm builds need only the header.
find_path(XXHASH_INCLUDE_DIR xxhash.h)
if(NOT XXHASH_INCLUDE_DIR)
  message(FATAL_ERROR "xxhash.h not found: run scripts/setup.sh (installs libxxhash-dev)")
endif()

# Fast-math changes float results between builds; refuse it outright.
foreach(flags_var CMAKE_CXX_FLAGS CMAKE_CXX_FLAGS_RELEASE CMAKE_CXX_FLAGS_RELWITHDEBINFO)
  if("${${flags_var}}" MATCHES "fast-math|Ofast|funsafe-math")
    message(FATAL_ERROR "${flags_var} has a fast-math flag; lockstep's determinism forbids it")
  endif()
endforeach()
