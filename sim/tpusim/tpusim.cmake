# The tpusim CLI and its output comparison library. Included from sw/runtime/CMakeLists.txt, after the
# runtime target exists: the executable must land at ${CMAKE_BINARY_DIR}/sim/tpusim (the path the
# Makefile runs), which is why sim/tpusim is not a CMake subdirectory of its own (its binary directory
# would take that path).
set(tpusim_cli_dir ${CMAKE_SOURCE_DIR}/sim/tpusim)

# Comparison of device outputs with the interpreter's, with the numerics tolerance; a library so that
# tests can check it directly.
add_library(tpusim_compare STATIC ${tpusim_cli_dir}/output_compare.cc)
target_include_directories(tpusim_compare PUBLIC ${CMAKE_SOURCE_DIR})
target_link_libraries(tpusim_compare PUBLIC tpusim_hlo)

if(TARGET tpusim_interpreter)
  add_executable(tpusim ${tpusim_cli_dir}/main.cc)
  target_link_libraries(tpusim PRIVATE tpusim_runtime tpusim_interpreter tpusim_compare)
  set_target_properties(tpusim PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/sim)
else()
  message(STATUS "sim/tpusim: tpusim_interpreter not available yet, skipping the tpusim CLI")
endif()
