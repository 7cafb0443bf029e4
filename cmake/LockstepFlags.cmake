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
# Emscripten's platform file claims x86 with 4-byte pointers; wasm32 has no x87 and rejects -msse2.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(i.86|x86|X86|x86_64|AMD64|amd64)$" AND CMAKE_SIZEOF_VOID_P EQUAL 4
   AND NOT EMSCRIPTEN)
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

# TEST ONLY: flags appended to the sim's compile options *after* its determinism flags, so that
# scripts/determinism-matrix.sh --inject-nondeterminism can build a deliberately broken target
# (e.g. -ffp-contract=fast on aarch64, -mfpmath=387 on i686) and prove the matrix catches it.
# Never set it in a build that is shipped or compared against the golden hashes.
set(LOCKSTEP_INJECT_NONDETERMINISM "" CACHE STRING
    "TEST ONLY: compile flags that deliberately break the sim's determinism (matrix self-test)")
if(LOCKSTEP_INJECT_NONDETERMINISM)
  message(WARNING "LOCKSTEP_INJECT_NONDETERMINISM='${LOCKSTEP_INJECT_NONDETERMINISM}': this "
                  "build is deliberately nondeterministic (determinism matrix self-test)")
  function(lockstep_inject_nondeterminism)
    separate_arguments(inject_flags UNIX_COMMAND "${LOCKSTEP_INJECT_NONDETERMINISM}")
    target_compile_options(lockstep_sim PUBLIC ${inject_flags})
  endfunction()
  # Deferred to the end of the top-level CMakeLists.txt, once sim/ has defined lockstep_sim.
  cmake_language(DEFER DIRECTORY "${PROJECT_SOURCE_DIR}" CALL lockstep_inject_nondeterminism)
endif()

# lockstep_library(<folder> [INSTALL] SOURCES file...)
# One library target per layer: lockstep_<folder>, alias lockstep::<folder>, public
# headers in <folder>/include/lockstep/<folder>/, C++20, our warnings plus -Wconversion.
# INSTALL: installed with its headers and exported as lockstep::<folder> (find_package(lockstep)).
include(GNUInstallDirs)
function(lockstep_library folder)
  cmake_parse_arguments(L "INSTALL" "" "SOURCES" ${ARGN})
  set(target lockstep_${folder})
  add_library(${target} ${L_SOURCES})
  add_library(lockstep::${folder} ALIAS ${target})
  set_target_properties(${target} PROPERTIES OUTPUT_NAME ${target} EXPORT_NAME ${folder})
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
  target_compile_features(${target} PUBLIC cxx_std_20)
  lockstep_warnings(${target})
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE -Wconversion)
  endif()
  if(L_INSTALL)
    install(TARGETS ${target} EXPORT lockstepTargets
            ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
    install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endfunction()
