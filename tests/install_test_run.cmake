# run(step command...) for the install tests (sdk_install_test, capi_install_test): runs the
# command and fails the test with its output when it fails; its output is left in run_output.
# Messages are prefixed with ${install_test_name}.
function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${install_test_name}: ${step} failed (${rc}):\n${out}")
  endif()
  message(STATUS "${install_test_name}: ${step}: ok")
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

# install_test_start(var...): fails unless every -Dvar=… was given, then empties WORK_DIR and sets
# `prefix`, the folder the build tree is installed into.
macro(install_test_start)
  foreach(var ${ARGN})
    if(NOT DEFINED ${var})
      message(FATAL_ERROR "${install_test_name}: -D${var}=… is required")
    endif()
  endforeach()
  set(prefix ${WORK_DIR}/prefix)
  file(REMOVE_RECURSE ${WORK_DIR})
  file(MAKE_DIRECTORY ${WORK_DIR})
endmacro()
