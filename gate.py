#!/usr/bin/env python3
"""Gate substrate candidates: `python gate.py --help`."""

import sys

from harness.gate.command import main

if __name__ == "__main__":
    sys.exit(main())
