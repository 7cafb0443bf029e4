# Standalone Asio (header-only, Debian's libasio-dev), set up one way for every target that
# includes it: the server, the client SDK, and tests that open raw sockets. The macros must be
# the same everywhere, not only for tidiness: the net tests link the server and the client SDK
# into one binary, and Asio's inline functions and templates have to be compiled alike there.
#   lockstep_use_asio(<target>)  adds the include folder, LOCKSTEP_ASIO_DEFINITIONS and
#                                ASIO_NO_DEPRECATED (PRIVATE: no public header of ours includes Asio)
# LOCKSTEP_ASIO_DEFINITIONS is what every translation unit that includes Asio must share, the
# websocketpp one too (server/CMakeLists.txt): ASIO_STANDALONE, and ASIO_DISABLE_STD_ALIGNED_ALLOC.
# Asio 1.22 decides whether its handler memory comes from aligned_alloc (freed by free) or from
# operator new (freed by operator delete) by whether a libstdc++ header was included before its
# config: a file that includes <asio.hpp> first gets operator new, one that includes <map> first
# gets aligned_alloc. Its allocation functions are inline, so one binary would take one file's
# allocation and another's release (AddressSanitizer reports alloc-dealloc-mismatch). Disabled,
# every file uses operator new and delete whatever its include order.
find_path(ASIO_INCLUDE_DIR asio.hpp)
if(NOT ASIO_INCLUDE_DIR)
  message(FATAL_ERROR "asio.hpp not found: run scripts/setup.sh (installs libasio-dev)")
endif()

set(LOCKSTEP_ASIO_DEFINITIONS ASIO_STANDALONE ASIO_DISABLE_STD_ALIGNED_ALLOC)

function(lockstep_use_asio target)
  target_include_directories(${target} PRIVATE ${ASIO_INCLUDE_DIR})
  target_compile_definitions(${target} PRIVATE ${LOCKSTEP_ASIO_DEFINITIONS} ASIO_NO_DEPRECATED)
  # Asio 1.22 enables co_await on clang only through <experimental/coroutine>, which clang 14
  # with libstdc++ 12 does not have; its C++20 coroutines work (the fuzz build compiles the
  # server with clang).
  # Windows (the mingw-w64 build of the C API): Winsock, and the Windows 10 API Asio is built for.
  if(WIN32)
    target_compile_definitions(${target} PRIVATE _WIN32_WINNT=0x0A00)
    target_link_libraries(${target} PRIVATE ws2_32 mswsock)
  endif()
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_definitions(${target} PRIVATE ASIO_HAS_CO_AWAIT=1)
  endif()
endfunction()
