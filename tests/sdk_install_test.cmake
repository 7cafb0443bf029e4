# sdk_install_test: the client SDK and the server library are installable and usable the way a
# game and a game backend use them.
#   1. cmake --install the build tree into a fresh prefix;
#   2. configure client_sdk/examples against that prefix only (find_package(lockstep));
#   3. build the examples (example_game, sumo_client); they link lockstep::client_sdk and its
#      dependencies from the prefix;
#   4. the same for server/examples (find_package(lockstep COMPONENTS server), lockstep::server),
#      and run it: it binds, serves, shuts down and prints its summary.
# Run by ctest as: cmake -DBUILD_DIR=… -DSOURCE_DIR=… -DWORK_DIR=… -DCXX=… [-DBUILD_TYPE=…]
#                        [-DCXX_FLAGS=…] [-DLINKER_FLAGS=…] [-DGENERATOR=…] -P sdk_install_test.cmake
set(install_test_name sdk_install_test)
include(${CMAKE_CURRENT_LIST_DIR}/install_test_run.cmake)
install_test_start(BUILD_DIR SOURCE_DIR WORK_DIR CXX)
set(example_build ${WORK_DIR}/example)
set(backend_build ${WORK_DIR}/backend)

run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(file lib/cmake/lockstep/lockstepConfig.cmake include/lockstep/client_sdk/client.h
             lib/cmake/lockstep/lockstepServerTargets.cmake include/lockstep/server/server.h)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "sdk_install_test: the install has no ${file}")
  endif()
endforeach()

set(configure_args -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX}
    -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON)
if(GENERATOR)
  list(APPEND configure_args -G ${GENERATOR})
endif()
if(BUILD_TYPE)
  list(APPEND configure_args -DCMAKE_BUILD_TYPE=${BUILD_TYPE})
endif()
# Sanitizer builds: the installed libraries need the same runtime flags at the example's link.
if(CXX_FLAGS)
  list(APPEND configure_args "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
endif()
if(LINKER_FLAGS)
  list(APPEND configure_args "-DCMAKE_EXE_LINKER_FLAGS=${LINKER_FLAGS}")
endif()
# Configures and builds the project in `source` into `build`, which must make `program`.
function(build_against_prefix what source build program)
  run("configure ${what} against the installed package" ${CMAKE_COMMAND} -S ${source} -B ${build}
      ${configure_args})
  # The package must come from the prefix, not from some other lockstep on the machine.
  file(STRINGS ${build}/CMakeCache.txt found_dir REGEX "^lockstep_DIR:")
  if(NOT found_dir MATCHES "${prefix}/")
    message(FATAL_ERROR "sdk_install_test: lockstep was found elsewhere: ${found_dir}")
  endif()
  run("build ${what}" ${CMAKE_COMMAND} --build ${build})
  if(NOT EXISTS ${build}/${program})
    message(FATAL_ERROR "sdk_install_test: building ${what} made no ${program}")
  endif()
endfunction()

build_against_prefix("the game example" ${SOURCE_DIR}/client_sdk/examples ${example_build}
                     example_game)
if(NOT EXISTS ${example_build}/sumo_client)
  message(FATAL_ERROR "sdk_install_test: building the examples made no sumo_client")
endif()
build_against_prefix("the embedded server" ${SOURCE_DIR}/server/examples ${backend_build}
                     embedded_server)
# A game that links only the client SDK needs none of the server's dependencies.
run("configure the game example where spdlog cannot be found" ${CMAKE_COMMAND}
    -S ${SOURCE_DIR}/client_sdk/examples -B ${WORK_DIR}/example_without_spdlog ${configure_args}
    -DCMAKE_DISABLE_FIND_PACKAGE_spdlog=ON)
# 0 seconds: start (bind 127.0.0.1:0), shut down at once, print the summary, exit 0.
execute_process(COMMAND ${backend_build}/embedded_server 0 RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 60)
if(NOT rc EQUAL 0 OR NOT out MATCHES "listening port=[1-9]" OR NOT out MATCHES "summary {")
  message(FATAL_ERROR "sdk_install_test: embedded_server failed (${rc}):\n${out}\n${err}")
endif()
message(STATUS "sdk_install_test: run the embedded server: ok")
