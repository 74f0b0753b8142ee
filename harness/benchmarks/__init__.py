"""Benchmarks: the substrates' kernels timed (`kernels`), compiling alone against in batches (`compile`), and the
gate against a KernelBench-style check at real sizes (`gate`)."""
