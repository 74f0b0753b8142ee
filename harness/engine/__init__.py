"""The mutation-campaign engine, one module per stage: plan (which substrates and mutants), compile
(many mutants as one NVRTC program, and on the CPU one g++ run), run (warm workers over the GPUs, from
the parent's side) and worker (a substrate kept warm inside one), judge (the oracles beyond the value
suites, over the survivors), store (results appended as they come) and report (statuses, scores, the
mutation-testing-elements report); mutants holds the operators. `python -m harness.campaign` drives it."""
