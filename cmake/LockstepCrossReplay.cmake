# Cross and wasm builds of lockstep-replay-verify (LOCKSTEP_SIM_ONLY + LOCKSTEP_REPLAY_TOOL), so
# that the determinism matrix also replays the golden recorded matches (replays/golden/*.lsr) on
# every platform: the file format, the codec and the sim together, not the sim alone.
#
# A cross compiler must not search the host's /usr/include (its libc headers are x86-64's), and
# there is no aarch64/i686/wasm build of libflatbuffers to find. It is used header-only here
# (FlatBufferBuilder, Verifier and the generated accessors live in headers), so a folder with
# copies of the headers is all a target needs: LOCKSTEP_STAGED_INCLUDE_DIR holds flatbuffers/
# (scripts/determinism-matrix.sh stages it next to xxhash.h). The schemas are compiled by the
# host's flatc: its output is plain C++, the same for every target.
set(LOCKSTEP_STAGED_INCLUDE_DIR "" CACHE PATH
    "Cross builds of lockstep-replay-verify: a folder with the flatbuffers/ headers only")
if(NOT EXISTS "${LOCKSTEP_STAGED_INCLUDE_DIR}/flatbuffers/flatbuffers.h")
  message(FATAL_ERROR "LOCKSTEP_REPLAY_TOOL needs LOCKSTEP_STAGED_INCLUDE_DIR with "
                      "flatbuffers/flatbuffers.h (got '${LOCKSTEP_STAGED_INCLUDE_DIR}')")
endif()
find_program(LOCKSTEP_FLATC flatc NO_CMAKE_FIND_ROOT_PATH REQUIRED)

add_executable(flatbuffers::flatc IMPORTED)
set_target_properties(flatbuffers::flatc PROPERTIES IMPORTED_LOCATION "${LOCKSTEP_FLATC}")
add_library(flatbuffers::flatbuffers INTERFACE IMPORTED)
target_include_directories(flatbuffers::flatbuffers SYSTEM INTERFACE "${LOCKSTEP_STAGED_INCLUDE_DIR}")
