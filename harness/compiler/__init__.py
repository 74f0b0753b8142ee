"""The compile layer: CUDA source to loadable code with NVRTC (one source, or many variants as one program), the
on-disk cache that lets a compile be skipped, and the kernel's parameter list read from its PTX."""
