#!/usr/bin/env python3
"""A stand-in for compute-sanitizer in the CPU tests: runs the program it is given, then appends to its
--log-file the report that FAKE_SANITIZER_<TOOL> holds (lines separated by '|'), each line after the
tool's '========= ' prefix, as the real tool writes them; with FAKE_SANITIZER_WHEN set, only when the
program's plan (its next-to-last argument) holds that text, as a real report comes only from a process
that ran the kernel.

Exit status as compute-sanitizer's with --error-exitcode: that code when it reported something and the
program itself exited 0; else the program's own status.
"""

import os
import subprocess
import sys

args = sys.argv[1:]
options = {}
while args and args[0].startswith("--"):
    options[args[0]] = args[1]
    args = args[2:]
status = subprocess.run(args).returncode
report = os.environ.get(f"FAKE_SANITIZER_{options['--tool'].upper()}", "")
when = os.environ.get("FAKE_SANITIZER_WHEN")
if when and when not in open(args[-2]).read():
    report = ""
with open(options["--log-file"], "a") as log:
    log.write("========= COMPUTE-SANITIZER\n")
    for line in report.split("|") if report else []:
        log.write(f"========= {line}\n")
    log.write(f"========= ERROR SUMMARY: {1 if report else 0} error{'' if report else 's'}\n")
if status < 0:  # the program died of a signal: so does the tool, as far as its caller can tell
    os.kill(os.getpid(), -status)
sys.exit(int(options["--error-exitcode"]) if report and status == 0 else status)
