#!/usr/bin/env python3
"""`tpusim profile` on the PyTorch/XLA MNIST training step (784-120-84-10), end to end.

  profile_report_test.py TPUSIM HLO_FILE CHROMIUM

Checks that the Chrome trace loads as JSON with the device, unit and host tracks and that its operation
slices add up to the run's cycles; that the findings name the padding of the four layers on the v2
configuration (128 lanes); and renders the HTML report in headless Chromium, decoding the screenshot to
check that each unit's row of the timeline is drawn. Standard library only.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

UNIT_COLORS = {"dma": (0x1F, 0x77, 0xB4), "mxu": (0xD6, 0x27, 0x28), "vpu": (0x2C, 0xA0, 0x2C)}  # html_report.h
WIDTH, HEIGHT = 1200, 700


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def decode_png(path):
    """Returns (width, height, rows of RGB tuples) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    pos, idat, width, height, color_type = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color_type = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color_type not in (2, 6):
                fail("unexpected PNG format depth=%d color_type=%d" % (depth, color_type))
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    channels = 3 if color_type == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        filter_type = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            upper_left = previous[x - channels] if x >= channels else 0
            if filter_type == 1:
                line[x] = (line[x] + left) & 0xFF
            elif filter_type == 2:
                line[x] = (line[x] + up) & 0xFF
            elif filter_type == 3:
                line[x] = (line[x] + (left + up) // 2) & 0xFF
            elif filter_type == 4:
                p = left + up - upper_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - upper_left)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else upper_left)
                line[x] = (line[x] + predictor) & 0xFF
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, channels)])
        previous = line
    return width, height, rows


def main():
    if len(sys.argv) != 4:
        fail("usage: profile_report_test.py TPUSIM HLO_FILE CHROMIUM")
    tpusim, hlo, chromium = sys.argv[1:]
    with tempfile.TemporaryDirectory() as scratch:
        trace, report, screenshot = (os.path.join(scratch, name) for name in ("t.json", "r.html", "r.png"))
        run = subprocess.run([tpusim, "profile", hlo, "--backend=model", "--config=v2", "--seed=3", "--trace=" + trace,
                              "--report=" + report], capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            fail("tpusim profile exited %d:\n%s%s" % (run.returncode, run.stdout, run.stderr))
        cycles = int(next(line.split()[1] for line in run.stdout.splitlines() if line.startswith("cycles: ")))

        with open(trace) as f:
            events = json.load(f)["traceEvents"]
        threads = {(e["pid"], e["args"]["name"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
        for track in ((1, "HLO operations"), (1, "DMA"), (1, "MXU"), (1, "VPU"), (2, "tpusim")):
            if track not in threads:
                fail("trace has no track %s: %s" % (track, sorted(threads)))
        op_slices = [e for e in events if e["ph"] == "X" and e["pid"] == 1 and e["tid"] == 1]
        if sum(e["args"]["cycles"] for e in op_slices) != cycles:
            fail("operation slices add up to %d cycles, the run took %d" % (sum(e["args"]["cycles"] for e in op_slices), cycles))
        host = {e["name"] for e in events if e["ph"] == "X" and e["pid"] == 2}
        if not {"compile", "execute"} <= host:
            fail("host track lacks compile/execute: %s" % sorted(host))

        # The padding of each layer 784-120-84-10: the features pad to whole 128-lane tiles.
        findings = [line for line in run.stdout.splitlines() if line.startswith("  [padding]")]
        for padded in ("f32[32,784] -> f32[32,896]", "f32[784,120] -> f32[896,128]", "f32[120,84] -> f32[128,128]",
                       "f32[84,10] -> f32[128,128]"):
            if not any(padded in line for line in findings):
                fail("no padding finding names %s:\n%s" % (padded, "\n".join(findings)))
        if "[batch]" not in run.stdout:
            fail("no batch finding (32 rows per weight tile):\n" + run.stdout)

        try:
            shot = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                   "--window-size=%d,%d" % (WIDTH, HEIGHT), "--screenshot=" + screenshot,
                                   "file://" + report], capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            fail("no %s to render the report: install Debian's chromium (make deps)" % chromium)
        if shot.returncode != 0 or not os.path.exists(screenshot):
            fail("chromium could not render the report (exit %d):\n%s" % (shot.returncode, shot.stderr[-2000:]))
        width, height, rows = decode_png(screenshot)
        if (width, height) != (WIDTH, HEIGHT):
            fail("screenshot is %dx%d, asked for %dx%d" % (width, height, WIDTH, HEIGHT))
        counts = {unit: 0 for unit in UNIT_COLORS}
        for row in rows:
            for pixel in row:
                for unit, color in UNIT_COLORS.items():
                    if pixel == color:
                        counts[unit] += 1
        # Each unit's row is drawn: at least a few hundred pixels of its color (the legend swatch alone is ~200).
        for unit, count in counts.items():
            if count < 1000:
                fail("the %s row of the timeline has %d pixels of its color in the screenshot" % (unit, count))
        print("profile_report ok: cycles=%d op_slices=%d findings=%d pixels=%s" % (cycles, len(op_slices), len(findings), counts))


if __name__ == "__main__":
    main()
