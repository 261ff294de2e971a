"""Ctrl-C while the device runs a program from Python: acknowledged on stderr at once (Python's own handler
only runs when the call returns), then raised as KeyboardInterrupt once the program has finished."""

import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import time

CONFIG = os.environ.get("TPU_CONFIG", "tiny")

# A 512^3 f32 dot keeps the verilated chip busy for seconds.
CHILD = textwrap.dedent("""
    import sys, time
    import numpy as np
    import _tpusim
    client = _tpusim.Client("rtl", sys.argv[1])
    exe = client.compile('''HloModule long_dot
    ENTRY %main (a: f32[512,512], b: f32[512,512]) -> f32[512,512] {
      %a = f32[512,512]{1,0} parameter(0)
      %b = f32[512,512]{1,0} parameter(1)
      ROOT %d = f32[512,512]{1,0} dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
    }
    ''')
    a = client.buffer_from_numpy(np.ones((512, 512), np.float32))
    b = client.buffer_from_numpy(np.ones((512, 512), np.float32))
    print("running", flush=True)
    start = time.monotonic()
    try:
        outputs, counters = exe.execute([a, b])
        print("returned without an interrupt", flush=True)
    except KeyboardInterrupt:
        print("KeyboardInterrupt after %.2f s" % (time.monotonic() - start), flush=True)
        sys.exit(130)
""")


def test_ctrl_c_during_execute_is_acknowledged_at_once_and_raised_after_the_program():
    child = subprocess.Popen([sys.executable, "-c", CHILD, CONFIG], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout.readline().strip() == b"running"
    time.sleep(0.5)
    assert child.poll() is None, "the program ended before the interrupt"
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    stderr, acknowledged = b"", None
    while acknowledged is None and time.monotonic() - sent < 5:
        if select.select([child.stderr], [], [], 0.1)[0]:
            chunk = child.stderr.read1(4096)
            stderr += chunk
            if b"Interrupt received" in stderr:
                acknowledged = time.monotonic() - sent
            if not chunk:
                break
    stdout, rest = child.communicate(timeout=300)
    stderr += rest
    assert acknowledged is not None and acknowledged < 1.0, (acknowledged, stderr.decode())
    assert child.returncode == 130, (child.returncode, stdout.decode(), stderr.decode())
    assert b"KeyboardInterrupt after" in stdout, stdout.decode()


def test_ctrl_c_during_a_steps_per_execution_loop_is_acknowledged_at_once_and_exits_130():
    # The trainer with 128 steps per device loop: the first Ctrl-C is answered at once (by the runtime while
    # the loop runs, by the trainer while it compiles), the loop finishes, training stops between
    # executions and the trainer exits 130.
    child = subprocess.Popen([sys.executable, "-u", "-m", "tpusim.train", "--model=mlp", "--config=" + CONFIG,
                              "--epochs=1", "--batch-size=32", "--train-examples=8192", "--no-validation",
                              "--optimizer=sgd", "--schedule=constant", "--steps-per-execution=128"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout.readline().strip() == b"Epoch 1/1"
    time.sleep(1.0)
    assert child.poll() is None
    sent = time.monotonic()
    child.send_signal(signal.SIGINT)
    output, acknowledged = b"", None
    streams = [child.stdout, child.stderr]
    while acknowledged is None and streams and time.monotonic() - sent < 5:
        for stream in select.select(streams, [], [], 0.1)[0]:
            chunk = stream.read1(4096)
            if not chunk:
                streams.remove(stream)
            output += chunk
        if b"Interrupt received: finishing" in output or b"Interrupted: finishing the current loop" in output:
            acknowledged = time.monotonic() - sent
    stdout, stderr = child.communicate(timeout=600)
    output += stdout + stderr
    assert acknowledged is not None and acknowledged < 1.0, (acknowledged, output.decode())
    assert child.returncode == 130, (child.returncode, output.decode())
    assert re.search(rb"interrupted at step (128|256)\b", output), output.decode()
