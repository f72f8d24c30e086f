"""What gemm() needs and nothing else: the target, the build, tensor maps, the rungs' geometry, the ladder, the plan and the call."""
