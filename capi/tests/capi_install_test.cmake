# capi_install_test: liblockstep_c is installable and usable the way a C program or an engine's
# build uses it, with nothing of the build tree:
#   1. cmake --install the build tree into a fresh prefix; the header, the library, the
#      pkg-config file and the CMake package must be there;
#   2. compile the C test suite with the flags `pkg-config --cflags --libs lockstep_c` gives, and
#      run it (without the server part);
#   3. configure install_consumer/ against the prefix only (find_package(lockstep_c)), build the
#      same suite through lockstep::c and run it.
# Run by ctest as: cmake -DBUILD_DIR=… -DSOURCE_DIR=… -DWORK_DIR=… -DCC=… -P capi_install_test.cmake
set(install_test_name capi_install_test)
include(${CMAKE_CURRENT_LIST_DIR}/../../tests/install_test_run.cmake)
install_test_start(BUILD_DIR SOURCE_DIR WORK_DIR CC)

run("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
file(GLOB pc_files ${prefix}/lib*/pkgconfig/lockstep_c.pc ${prefix}/lib/*/pkgconfig/lockstep_c.pc)
file(GLOB config_files ${prefix}/lib*/cmake/lockstep_c/lockstep_cConfig.cmake
     ${prefix}/lib/*/cmake/lockstep_c/lockstep_cConfig.cmake)
if(NOT EXISTS ${prefix}/include/lockstep.h OR NOT pc_files OR NOT config_files)
  message(FATAL_ERROR "capi_install_test: the install lacks lockstep.h, lockstep_c.pc or the "
                      "CMake package")
endif()
list(GET pc_files 0 pc_file)
get_filename_component(pc_dir ${pc_file} DIRECTORY)
get_filename_component(lib_dir ${pc_dir} DIRECTORY)

# 2. pkg-config, as a Makefile or an FFI build script would use it.
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
run("pkg-config" pkg-config --cflags --libs lockstep_c)
string(STRIP "${run_output}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
# The relocatable file names the prefix through its own folder: the -I folder must be the prefix's.
list(FILTER pc_flags INCLUDE REGEX "^-I")
list(TRANSFORM pc_flags REPLACE "^-I" "")
file(REAL_PATH "${pc_flags}" include_dir)
file(REAL_PATH ${prefix}/include prefix_include)
if(NOT include_dir STREQUAL prefix_include)
  message(FATAL_ERROR "capi_install_test: pkg-config's include folder is ${include_dir}, not the prefix's")
endif()
separate_arguments(pc_flags UNIX_COMMAND "${run_output}")
run("compile the C suite with pkg-config's flags" ${CC} -std=c11 -Wall -Wextra -Wpedantic -Werror
    ${SOURCE_DIR}/capi/tests/capi_test.c ${pc_flags} -lm -o ${WORK_DIR}/capi_test_pc)
run("run it" ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${lib_dir} ${WORK_DIR}/capi_test_pc
    ${SOURCE_DIR}/scenes)

# 3. find_package(lockstep_c), from the prefix and nowhere else.
run("configure against the installed package" ${CMAKE_COMMAND}
    -S ${SOURCE_DIR}/capi/tests/install_consumer -B ${WORK_DIR}/consumer
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_C_COMPILER=${CC}
    -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON)
file(STRINGS ${WORK_DIR}/consumer/CMakeCache.txt found_dir REGEX "^lockstep_c_DIR:")
if(NOT found_dir MATCHES "${prefix}/")
  message(FATAL_ERROR "capi_install_test: lockstep_c was found elsewhere: ${found_dir}")
endif()
run("build through lockstep::c" ${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run("run it" ${WORK_DIR}/consumer/consumer ${SOURCE_DIR}/scenes)
