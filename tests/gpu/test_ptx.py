"""kernels.cu compiles for the H200 (sm_90) with the entry points the backend looks up by name."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

# The path, not an import: CI also runs this file with the host's Python, where the CUDA toolkit
# is, and that Python has no Home Assistant to import the package with.
KERNELS = Path(__file__).parents[2] / "custom_components" / "alto" / "gpu" / "kernels.cu"
ENTRIES = {"score_one", "score_batch", "topk_pass"}


@pytest.fixture
def nvcc() -> str:
    """The path of nvcc; skips the test without one."""
    path = shutil.which("nvcc")
    if path is None:
        pytest.skip("nvcc is not on PATH")
    return path


def compile_kernels(nvcc: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Compile the kernels for sm_90 with every warning an error."""
    result = subprocess.run(
        [nvcc, "-arch=sm_90", "--Werror", "all-warnings", *args, str(KERNELS)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result


def test_ptx_has_the_unmangled_entry_points(nvcc: str, tmp_path: Path) -> None:
    """Ptx has the unmangled entry points."""
    out = tmp_path / "kernels.ptx"
    compile_kernels(nvcc, "-ptx", "-o", str(out))
    ptx = out.read_text()
    # extern "C": a C++-mangled name (_Z...) would not be found by SourceModule.get_function.
    assert set(re.findall(r"\.visible \.entry (\w+)\(", ptx)) == ENTRIES
    assert "dp4a.s32.s32" in ptx


def test_sm90_build_fits_without_spills(nvcc: str, tmp_path: Path) -> None:
    """Sm90 build fits without spills."""
    result = compile_kernels(nvcc, "-cubin", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"))
    report = result.stderr
    assert set(re.findall(r"Function properties for (\w+)", report)) == ENTRIES
    assert re.findall(r"(\d+) bytes spill stores", report) == ["0"] * len(ENTRIES)
    static_smem = [int(b) for b in re.findall(r"(\d+) bytes smem", report)]
    assert static_smem
    assert max(static_smem) <= 48 * 1024  # the static shared-memory limit
