# The tpusim CLI and its output comparison library. Included from sw/profiler/CMakeLists.txt, after the
# runtime and profiler targets exist: the executable must land at ${CMAKE_BINARY_DIR}/sim/tpusim (the path the
# Makefile runs), which is why sim/tpusim is not a CMake subdirectory of its own (its binary directory
# would take that path).
set(tpusim_cli_dir ${CMAKE_SOURCE_DIR}/sim/tpusim)

# Comparison of device outputs with the interpreter's, with the numerics tolerance; a library so that
# tests can check it directly.
add_library(tpusim_compare STATIC ${tpusim_cli_dir}/output_compare.cc)
target_include_directories(tpusim_compare PUBLIC ${CMAKE_SOURCE_DIR})
target_link_libraries(tpusim_compare PUBLIC tpusim_hlo)

add_executable(tpusim ${tpusim_cli_dir}/main.cc)
target_link_libraries(tpusim PRIVATE tpusim_runtime tpusim_profiler tpusim_interpreter tpusim_compare)
set_target_properties(tpusim PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/sim)

# The output lines of `tpusim run` that scripts parse.
add_executable(tpusim_output_test ${tpusim_cli_dir}/tpusim_output_test.cc)
target_link_libraries(tpusim_output_test PRIVATE GTest::gtest_main)
add_dependencies(tpusim_output_test tpusim)
target_compile_definitions(tpusim_output_test PRIVATE TPUSIM_BINARY="$<TARGET_FILE:tpusim>"
                                                      TPU_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
gtest_discover_tests(tpusim_output_test DISCOVERY_MODE PRE_TEST)

# Bad input (broken modules, impossible sizes, unsupported types, bad paths): exit status 1 and a clear
# message from the built binary, never a signal.
add_executable(tpusim_errors_test ${tpusim_cli_dir}/tpusim_errors_test.cc)
target_link_libraries(tpusim_errors_test PRIVATE tpusim_base GTest::gtest_main)
add_dependencies(tpusim_errors_test tpusim)
target_compile_definitions(tpusim_errors_test PRIVATE TPUSIM_BINARY="$<TARGET_FILE:tpusim>"
                                                      TPU_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
gtest_discover_tests(tpusim_errors_test DISCOVERY_MODE PRE_TEST)

# Ctrl-C during a long run on the verilated chip: acknowledged at once, exit 130 after the program ends.
add_test(NAME tpusim_interrupt_test
         COMMAND /usr/bin/python3 ${tpusim_cli_dir}/tpusim_interrupt_test.py $<TARGET_FILE:tpusim>
                 ${CMAKE_SOURCE_DIR}/tb/system/hlo/jax_mnist_cnn_train_step.hlo rtl)
set_tests_properties(tpusim_interrupt_test PROPERTIES TIMEOUT 300)
