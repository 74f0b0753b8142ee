"""Where NVRTC compiles a mutant alone into code its source does not say: the struct loads of pad_reflect_b1's loop.

pad_reflect_b1's `in_stride *= g.in_shape[d]` mutated to `g.in_shape[d + 1]` (its INDEX_OFF_BY_ONE at L26C33, and
the same line of the other pad kernels) is killed from its schema by another trial than compiled alone: alone, it
fails `misaligned trial 6` (rank 7, where `d + 1` stays inside `in_shape`), which its source passes. This prints, for
the unmutated source and that mutant, the offset from one base register of each `ld.param.u64` in the loop's
unrolled body, labelled with its source line: the unmutated source loads `in_shape[d]` (line 26) at -128 and the next
iteration's `out_shape[d - 1]` (line 21) at -72; the mutant loads `in_shape[d + 1]` at +8 (not -120) and
`out_shape[d - 1]` at +56 (not -72): 128 bytes past (`left_pad`, then past the struct's 200 bytes). No GPU needed.

Usage: python tests/miscompile_probe.py   (MEASUREMENTS.md, twenty-eighth session, has its output)
"""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MUTANT = "pad_reflect_b1:L26C33:index_off_by_one:0"


def loop_loads(ptx: str) -> list[str]:
    """"L<source line>:<offset>" of each ld.param.u64 in the loop's unrolled body, in order."""
    body = ptx[ptx.find("$L__BB0_4:"):]
    loads, line = [], None
    for loc, offset in re.findall(r"\.loc\t1 (\d+) \d+|ld\.param\.u64 \t%rd\d+, \[%rd\d+\+?(-?\d*)\]", body):
        if loc:
            line = loc
        else:
            loads.append(f"L{line}:{offset or 0}")
    return loads


def main() -> None:
    from harness.candidates import import_candidate, register_candidate
    from harness.compiler import nvrtc
    from harness.engine.mutants import generate

    path = Path(__file__).resolve().parents[1] / "substrates" / "candidate_pad_reflect.py"
    entry = register_candidate(import_candidate(path), path)["pad_reflect_b1"]
    mutants = {m.id: m for m in generate(entry["cuda"], "pad_reflect_b1")}
    print(f"NVRTC {nvrtc.compiler_version()}, compute_90")
    for label, source in (("unmutated", entry["cuda"]), (MUTANT, mutants[MUTANT].apply(entry["cuda"]))):
        compiled = nvrtc.compile_program(source, ("pad_reflect_b1",), "compute_90", "pad_reflect_b1.cu")
        print(f"{label}: {' '.join(loop_loads(compiled.kernel('pad_reflect_b1', 'pad_reflect_b1').ptx)[:8])}")


if __name__ == "__main__":
    main()
