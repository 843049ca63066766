"""kernels.cu compiles warning-free, without spills, with the entry points the device looks up.

The compiler is ``$ALTO_NVCC`` when set (e.g. the ``nvcc`` of the ``nvidia-cuda-nvcc`` wheel in
a throwaway folder), else ``nvcc`` on PATH; without one the tests skip. sm_90 is the H200,
sm_80 the first device with int8 mma, sm_75 the last without it (batches score with __dp4a).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

# The path, not an import: a CUDA host's Python may lack what the package imports.
KERNELS = Path(__file__).parents[2] / "custom_components" / "alto" / "gpu" / "kernels.cu"
ENTRIES = {
    "score_rows",
    "score_mma",
    "group_threshold",
    "gather_candidates",
    "topk_pass",
    "pack_rows",
}


@pytest.fixture(scope="module")
def nvcc() -> str:
    """The path of nvcc; skips the tests without one."""
    path = os.environ.get("ALTO_NVCC") or shutil.which("nvcc")
    if not path:
        pytest.skip("no nvcc: set ALTO_NVCC or put nvcc on PATH")
    return path


def compile_kernels(nvcc: str, arch: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Compile the kernels for ``arch`` with every warning an error."""
    result = subprocess.run(
        [nvcc, f"-arch={arch}", "--Werror", "all-warnings", *args, str(KERNELS)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr.lower(), result.stderr
    return result


def test_ptx_has_the_unmangled_entry_points_and_the_int8_paths(nvcc: str, tmp_path: Path) -> None:
    """Extern "C" names, the tensor-core mma, cp.async and __dp4a are all in sm_90's PTX."""
    out = tmp_path / "kernels.ptx"
    compile_kernels(nvcc, "sm_90", "-ptx", "-o", str(out))
    ptx = out.read_text()
    # extern "C": a C++-mangled name (_Z...) would not be found by SourceModule.get_function.
    assert set(re.findall(r"\.visible \.entry (\w+)\(", ptx)) == ENTRIES
    assert "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32" in ptx
    assert "cp.async.cg.shared.global" in ptx
    assert "dp4a.s32.s32" in ptx


@pytest.mark.parametrize("arch", ["sm_90", "sm_80", "sm_75"])
def test_cubins_fit_without_spills(nvcc: str, tmp_path: Path, arch: str) -> None:
    """Every entry compiles to a cubin without spills, within the static shared-memory limit."""
    result = compile_kernels(nvcc, arch, "-cubin", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"))
    report = result.stderr
    assert set(re.findall(r"Function properties for (\w+)", report)) == ENTRIES
    assert re.findall(r"(\d+) bytes spill stores", report) == ["0"] * len(ENTRIES)
    static_smem = [int(b) for b in re.findall(r"(\d+) bytes smem", report)]
    assert static_smem
    assert max(static_smem) <= 48 * 1024
    # Below sm_80 score_mma is an empty stub the host never launches.
    mma = re.search(r"Function properties for score_mma.*?Used (\d+) registers", report, re.S)
    assert mma
    assert (int(mma.group(1)) > 32) == (arch != "sm_75")
