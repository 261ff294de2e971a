#!/usr/bin/env python3
"""Ctrl-C during a long run of `tpusim run`: acknowledged on stderr within one second, the device finishes
the program it runs (its counters are printed), and tpusim exits with status 130 without comparing.

  tpusim_interrupt_test.py TPUSIM HLO_FILE BACKEND

The HLO file must keep BACKEND busy for several seconds (the JAX MNIST CNN step on the rtl backend).
"""
import os
import select
import signal
import subprocess
import sys
import time


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def main():
    if len(sys.argv) != 4:
        fail("usage: tpusim_interrupt_test.py TPUSIM HLO_FILE BACKEND")
    tpusim, hlo, backend = sys.argv[1:]
    # The runtime's INFO lines on stderr say when the program is launched ("] Execute <module> on <device>"),
    # so the interrupt lands while the device runs however long compiling and uploading took.
    environment = dict(os.environ, TPU_STDERR_LOG_LEVEL="0")
    process = subprocess.Popen([tpusim, "run", hlo, "--backend=" + backend, "--seed=3"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=environment)
    stderr = b""
    started = time.monotonic()
    while b"] Execute " not in stderr:
        if time.monotonic() - started > 120:
            fail("the program was not launched within 120 s:\n" + stderr.decode())
        ready, _, _ = select.select([process.stderr], [], [], 0.1)
        chunk = process.stderr.read1(4096) if ready else b""
        if ready and not chunk:
            fail("tpusim ended before its program was launched (exit %s):\n%s" % (process.wait(), stderr.decode()))
        stderr += chunk
    if process.poll() is not None:
        fail("tpusim ended before the interrupt (exit %d): pick a longer program" % process.returncode)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    acknowledged = None
    launched = len(stderr)
    while time.monotonic() - sent < 5 and acknowledged is None:
        ready, _, _ = select.select([process.stderr], [], [], 0.1)
        if ready:
            chunk = process.stderr.read1(4096)
            stderr += chunk
            if b"interrupted" in stderr[launched:]:
                acknowledged = time.monotonic() - sent
            if not chunk:
                break
    stdout, rest = process.communicate(timeout=300)
    stderr += rest
    text = stdout.decode() + stderr.decode()
    if acknowledged is None:
        fail("no acknowledgement on stderr:\n" + text)
    if acknowledged > 1.0:
        fail("acknowledged after %.2f s" % acknowledged)
    if process.returncode != 130:
        fail("exit status %d, expected 130:\n%s" % (process.returncode, text))
    if "cycles: " not in stdout.decode():
        fail("the device did not finish its program (no counters):\n" + text)
    if "output 0" in stdout.decode():
        fail("the outputs were compared after the interrupt:\n" + text)
    print("interrupt ok: acknowledged after %.3f s, exit 130" % acknowledged)


if __name__ == "__main__":
    main()
