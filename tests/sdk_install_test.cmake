# sdk_install_test: the client SDK is installable and usable the way a game uses it.
#   1. cmake --install the build tree into a fresh prefix;
#   2. configure client_sdk/examples against that prefix only (find_package(lockstep));
#   3. build the example; it links lockstep::client_sdk and its dependencies from the prefix.
# Run by ctest as: cmake -DBUILD_DIR=… -DSOURCE_DIR=… -DWORK_DIR=… -DCXX=… [-DBUILD_TYPE=…]
#                        [-DCXX_FLAGS=…] [-DLINKER_FLAGS=…] [-DGENERATOR=…] -P sdk_install_test.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "sdk_install_test: -D${var}=… is required")
  endif()
endforeach()

set(prefix ${WORK_DIR}/prefix)
set(example_build ${WORK_DIR}/example)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "sdk_install_test: ${step} failed (${rc}):\n${out}")
  endif()
  message(STATUS "sdk_install_test: ${step}: ok")
endfunction()

run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(file lib/cmake/lockstep/lockstepConfig.cmake include/lockstep/client_sdk/client.h)
  if(NOT EXISTS ${prefix}/${file})
    message(FATAL_ERROR "sdk_install_test: the install has no ${file}")
  endif()
endforeach()

set(configure_args -S ${SOURCE_DIR}/client_sdk/examples -B ${example_build}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX}
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
run("configure the example against the installed package" ${CMAKE_COMMAND} ${configure_args})
# The package must come from the prefix, not from some other lockstep on the machine.
file(STRINGS ${example_build}/CMakeCache.txt found_dir REGEX "^lockstep_DIR:")
if(NOT found_dir MATCHES "${prefix}/")
  message(FATAL_ERROR "sdk_install_test: lockstep was found elsewhere: ${found_dir}")
endif()
run("build the example" ${CMAKE_COMMAND} --build ${example_build})
if(NOT EXISTS ${example_build}/example_game)
  message(FATAL_ERROR "sdk_install_test: the build made no example_game")
endif()
