"""NVIDIA's published peaks of the boards `codegen --bench` knows, for when the device properties give none."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Datasheet:
    """NVIDIA's published peaks for one board: memory bandwidth and dense (no sparsity) compute."""

    label: str
    bandwidth: float  # GB/s
    compute: dict[str, float]  # dtype -> TFLOP/s


#: NVIDIA H100 / H200 datasheets. Tensor-core figures are printed "with sparsity"; dense is half.
#: f32 is the CUDA-core (non-tensor) rate; tf32 the tensor-core rate for float32 inputs.
_GH100_SXM = {"f64": 34.0, "f32": 67.0, "tf32": 494.5, "bf16": 989.5, "f16": 989.5}
_GH100_NVL = {"f64": 30.0, "f32": 60.0, "tf32": 417.5, "bf16": 835.5, "f16": 835.5}
DATASHEETS: tuple[tuple[Callable[[str], bool], Datasheet], ...] = (
    (lambda n: "H200" in n and "NVL" in n, Datasheet("H200 NVL", 4800.0, _GH100_NVL)),
    (lambda n: "H200" in n, Datasheet("H200 SXM", 4800.0, _GH100_SXM)),
    (lambda n: "H100" in n and "NVL" in n, Datasheet("H100 NVL", 3900.0, _GH100_NVL)),
    (lambda n: "H100" in n and "PCIE" in n.upper(),
     Datasheet("H100 PCIe", 2000.0, {"f64": 26.0, "f32": 51.0, "tf32": 378.0, "bf16": 756.5, "f16": 756.5})),
    (lambda n: "H100" in n, Datasheet("H100 SXM", 3350.0, _GH100_SXM)),
)


def datasheet(device_name: str) -> Optional[Datasheet]:
    for matches, sheet in DATASHEETS:
        if matches(device_name):
            return sheet
    return None


def theoretical_bandwidth(memory_clock_khz: int, bus_width_bits: int) -> float:
    """GB/s from the memory clock (kHz, as CUDA reports it) and bus width: clock × width/8 × 2 (DDR)."""
    return memory_clock_khz * 1e3 * (bus_width_bits / 8) * 2 / 1e9
