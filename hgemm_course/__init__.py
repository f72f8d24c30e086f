"""hgemm-course: write an FP16 GEMM for NVIDIA GPUs, one idea at a time, measured against cuBLAS."""
__version__ = "0.1.0"
