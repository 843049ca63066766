"""Exact selection on a GPU (PyCUDA, optional) with the numpy reference as the fallback."""

from .backend import CudaBackend, NumpyBackend, SelectionBackend, select_backend

__all__ = ["CudaBackend", "NumpyBackend", "SelectionBackend", "select_backend"]
