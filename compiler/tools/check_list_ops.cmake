# Checks that docs/opcodes.md is what `tpuc --list-ops` prints (-DTPUC=<tpuc> -DDOC=<docs/opcodes.md>):
# the user guide's opcode table comes from the code generator's handler table and cannot go stale.
# Regenerate with: build/<config>/compiler/tools/tpuc --list-ops > docs/opcodes.md
execute_process(COMMAND ${TPUC} --list-ops OUTPUT_VARIABLE listed RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "tpuc --list-ops exited with ${status}")
endif()
file(READ ${DOC} documented)
if(NOT listed STREQUAL documented)
  message(FATAL_ERROR "${DOC} is not what `tpuc --list-ops` prints; regenerate it:\n"
                      "  tpuc --list-ops > docs/opcodes.md\n--- tpuc --list-ops ---\n${listed}")
endif()
