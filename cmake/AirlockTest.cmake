# al_test(NAME SOURCES f.c... [LIBS l...] [LABELS unit|redis|vm|fault]
#         [TIMEOUT s] [ARGS a...])
# One cmocka binary per module, registered with CTest under its labels.
# Labels: unit (no VM, no server), redis (a real redis-server), vm (real
# VMs), fault (fault injection), fuzz (short fuzz runs).
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
function(al_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} PkgConfig::CMOCKA)
  target_compile_definitions(${name} PRIVATE
    AL_SOURCE_DIR="${CMAKE_SOURCE_DIR}" AL_BINARY_DIR="${CMAKE_BINARY_DIR}")
  add_test(NAME ${name} COMMAND ${name} ${T_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}"
                       TIMEOUT ${T_TIMEOUT})
endfunction()
