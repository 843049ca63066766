"""Exact selection: numpy reference, GPU plan and kernels, backend choice."""
