"""KernelBench-style substrate harness: load, compile, launch and gate hand-written CUDA substrates."""

__version__ = "0.1.0"
