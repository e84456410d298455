# add_criterion_test(NAME name SOURCES a.c ... [LIBS lib ...] LABELS unit|sim|integration
#                    [TIMEOUT seconds])
# One Criterion binary per test file, one ctest entry each (syslog-ng style), labelled so that
# `ctest -L unit` and `ctest -L sim` run without FUSE.
function(add_criterion_test)
  cmake_parse_arguments(ACT "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${ACT_NAME} ${ACT_SOURCES})
  target_link_libraries(${ACT_NAME} PRIVATE PkgConfig::CRITERION ${ACT_LIBS})
  # Test helpers format into fixed buffers on purpose (a cut message or path fails the test
  # visibly); gcc's -O2 truncation heuristics would otherwise break release builds of them.
  target_compile_options(${ACT_NAME} PRIVATE $<$<C_COMPILER_ID:GNU>:-Wno-format-truncation>)
  # -j1: the suites share the 2-core machine with ctest's own parallelism. The wrapper makes
  # skips visible: each is printed with its reason and listed in Testing/skipped/ (make test
  # shows them), and a suite whose every test skipped exits 77, which ctest reports as skipped.
  add_test(NAME ${ACT_NAME}
           COMMAND ${PROJECT_SOURCE_DIR}/tests/run-criterion.sh
                   ${CMAKE_BINARY_DIR}/Testing/skipped ${ACT_NAME}
                   $<TARGET_FILE:${ACT_NAME}> -j1)
  if(NOT ACT_TIMEOUT)
    set(ACT_TIMEOUT 300)
  endif()
  set_tests_properties(${ACT_NAME} PROPERTIES LABELS "${ACT_LABELS}" TIMEOUT ${ACT_TIMEOUT}
                       SKIP_RETURN_CODE 77)
endfunction()
