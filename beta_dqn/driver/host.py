"""What a run records of its host beside its numbers: the CPU's model and the kernels its libraries dispatch to.
Hosts of one model name can differ in the second, and a serial run that repeats bit for bit on one host may then
not repeat on another (docs/reproducing.md)."""

from __future__ import annotations

import os
import platform


def cpu_model() -> str | None:
    """The CPU's model name as the kernel reports it (/proc/cpuinfo's first "model name"; elsewhere the
    platform's processor string), or None when neither tells: what a run's summary records beside the commit,
    since hosts of one kind differ in speed and results are compared per machine."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return platform.processor() or None


def cpu_capability() -> str | None:
    """The instruction set torch's CPU kernels dispatch to on this host (`torch.backends.cpu.get_cpu_capability()`:
    DEFAULT, AVX2, AVX512, ...): hosts with one model name can differ in it, and a serial run that repeats bit for
    bit on one host may not on another, so a run's summary records it."""
    import torch

    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):
        return None


# the environment variables that steer which CPU kernels the libraries pick (recorded where set): torch's ATen, its
# oneDNN and MKL, numpy's SIMD dispatch, OpenBLAS's core
KERNEL_VARIABLES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", "NPY_DISABLE_CPU_FEATURES",
                    "NPY_ENABLE_CPU_FEATURES", "OPENBLAS_CORETYPE")


def cpu_kernels() -> dict[str, str | None]:
    """The CPU kernels a run's arithmetic dispatched to, as far as the libraries say: torch's capability (the
    learner), numpy's enabled SIMD dispatch targets and the core OpenBLAS chose (numpy's BLAS: the actors' forward
    passes), and any of KERNEL_VARIABLES that is set (MKL's and oneDNN's own choice is not recorded, only the
    variables that steer it). Hosts of one model name can differ here, and a serial run may then not repeat: a
    stage-1a record (its host believed to lack AVX-512) repeated on an AVX-512 host with all three held to AVX2, and
    not with the host's own kernels (docs/reproducing.md). A library that does not say, or fails to, gives None:
    this never stops a run from writing its summary."""
    found: dict[str, str | None] = {}
    for name, ask in (("torch", cpu_capability), ("numpy", numpy_simd), ("openblas", openblas_core)):
        try:
            found[name] = ask()
        except Exception:  # noqa: BLE001 - machine information only; a run's summary must not fail on it
            found[name] = None
    found.update({name: os.environ[name] for name in KERNEL_VARIABLES if name in os.environ})
    return found


def numpy_simd() -> str | None:
    """numpy's SIMD dispatch targets enabled on this host (`X86_V3 X86_V4 AVX512_ICL`), from its own tables
    (numpy 2's private module; None where it has none)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:
        return None
    return " ".join(name for name in __cpu_dispatch__ if __cpu_features__.get(name)) or "baseline"


def openblas_core() -> str | None:
    """The core OpenBLAS chose at load (`SkylakeX`, `Zen`, `Haswell`), asked of the library numpy loaded (Linux:
    its path in /proc/self/maps, read as bytes); None where there is none or it does not say."""
    import ctypes

    import numpy  # noqa: F401 - loads its BLAS

    try:
        with open("/proc/self/maps", "rb") as f:
            paths = sorted({line.split()[-1] for line in f if b"openblas" in line.lower() and b".so" in line})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(os.fsdecode(path))
        except OSError:
            continue
        for symbol in ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename64_",
                       "openblas_get_corename"):
            get = getattr(lib, symbol, None)
            if get is not None:
                get.restype = ctypes.c_char_p
                name = get()
                return name.decode(errors="replace") if name else None
    return None
