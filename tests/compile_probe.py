"""What a campaign's compile stage costs a batch on this machine, by step: NVRTC to a cubin (sm_90) and to PTX
alone (compute_90), nvJitLink assembling the address-checked PTX, and the code digests; in this process as it is,
then after torch has made a CUDA context (a campaign worker's state). Run by tests/gpu_session.sh (COMPILE_PROBE=1);
prints one line per step: the wall and processor seconds summed over the batches.

Usage: python tests/compile_probe.py [SUBSTRATE ...]   (default: three of different sizes)
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(names: list[str]) -> None:
    from harness.backends import address_check
    from harness.compiler import nvrtc
    from harness.compiler.batches import batch_program, code_digests
    from harness.engine.compile import batches
    from harness.engine.mutants import generate
    from harness.engine.worker import BATCH_SIZE
    from tests.conftest import registered_entries

    programs = []
    for entry in registered_entries():
        if entry.name in names:
            mutants = {m.id: m for m in generate(entry.cuda, entry.name)}
            for batch in batches(list(mutants), BATCH_SIZE):
                programs.append(batch_program([mutants[i].apply(entry.cuda) for i in batch], entry.kernel_name,
                                              f"{entry.name}.cu"))

    def measure(label: str) -> None:
        totals: dict[str, list[float]] = {}

        def timed(step: str, work):
            wall, cpu = time.perf_counter(), time.process_time()
            result = work()
            spent = totals.setdefault(step, [0.0, 0.0])
            spent[0] += time.perf_counter() - wall
            spent[1] += time.process_time() - cpu
            return result

        for program in programs:
            timed("NVRTC sm_90", lambda: nvrtc.compile_program(program.source, program.name_expressions, "sm_90"))
            compiled = timed("NVRTC compute_90", lambda: nvrtc.compile_program(
                program.source, program.name_expressions, "compute_90"))
            timed("nvJitLink, checked", lambda: address_check.assemble(address_check.instrument(compiled.ptx), "sm_90"))
            timed("code digests", lambda: code_digests(compiled.ptx, len(program.name_expressions)))
        for step, (wall, cpu) in totals.items():
            print(f"{label}: {step}: {len(programs)} batches, {wall:.2f} s wall, {cpu:.2f} s on a processor", flush=True)

    measure("plain process")
    import torch

    torch.zeros(1, device="cuda")
    measure("after torch and a CUDA context")


if __name__ == "__main__":
    main(sys.argv[1:] or ["masked_fill_b4", "pad_const_b4", "pad_backward_reflect_f32"])
