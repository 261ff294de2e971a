"""The GTKWave save file make sim writes: the template's view on the program's first cycle, named markers at
the first HLO operations, absolute translate filter paths, and the pc filter naming each word's operation."""

import os
from types import SimpleNamespace

from tpusim import sim_step

SOURCE_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "..")


def test_save_file_opens_on_the_program_with_markers_and_filters(tmp_path):
    executable = SimpleNamespace(
        code_ranges=[("add.1 = f32[8] add", 2, 5), ("dot.2 = f32[8,8] dot", 6, 9), ("copy x to output 0", 10, 12)],
        instruction_words=13)
    profile = SimpleNamespace(start_cycle=1000, ops=[{"start_cycle": 0}, {"start_cycle": 40}, {"start_cycle": 95}])
    opcode_filter = tmp_path / "tpu_opcodes.gtkw_filter"
    opcode_filter.write_text("00 NOP\n")
    args = SimpleNamespace(gtkw=str(tmp_path / "sim.gtkw"), gtkw_template=os.path.join(SOURCE_DIR, "sim", "chip.gtkw"),
                           opcode_filter=str(opcode_filter))
    sim_step.write_save_file(args, executable, profile)

    lines = (tmp_path / "sim.gtkw").read_text().splitlines()
    assert "[timestart] 1000000" in lines  # cycle 1000 at 1000 ps per cycle
    star = next(line for line in lines if line.startswith("*")).split()
    assert star[1] == "1000000"  # the primary marker on the first cycle
    assert star[2:5] == ["1000000", "1040000", "1095000"]  # A, B, C at the operations' starts
    assert star[5:] == ["-1"] * 23 and len(star) == 2 + 26
    filters = [line for line in lines if line.startswith("^")]
    assert filters == ["^2 " + str(tmp_path / "hlo_operations.gtkw_filter"), "^1 " + str(opcode_filter)]

    words = dict(line.split(maxsplit=1) for line in (tmp_path / "hlo_operations.gtkw_filter").read_text().splitlines()
                 if not line.startswith("#"))
    assert len(words) == 13  # every instruction word, the first operation from word 0, the last to the HALT
    assert words["00000000"] == words["00000005"] == "add.1"  # its range and the SYNC after it
    assert words["00000006"] == "dot.2"
    assert words["0000000C"] == "copy x to output 0"
