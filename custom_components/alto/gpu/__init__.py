"""Exact selection on a GPU (PyCUDA, optional) with exact CPU selection as the fallback."""

from .backend import CpuBackend, CudaBackend, SelectionBackend, select_backend

__all__ = ["CpuBackend", "CudaBackend", "SelectionBackend", "select_backend"]
