"""How a kernel's output is compared with the reference, as a record: no torch here, so that what only reads
candidates (a campaign's plan, a cluster item's process) does not import it."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_TOLERANCE = 1e-2  # the spec's atol = rtol for arithmetic kernels


@dataclass(frozen=True)
class Tolerance:
    """How outputs are compared: `exact` compares bit patterns; otherwise |got-exp| <= atol + rtol*|exp|."""

    exact: bool = False
    atol: float = DEFAULT_TOLERANCE
    rtol: float = DEFAULT_TOLERANCE

    def describe(self) -> str:
        return "bitwise" if self.exact else f"atol={self.atol:g}, rtol={self.rtol:g}"
