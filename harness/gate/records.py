"""Records the gate produces: one per check, per suite, per substrate, per run.

Plain dataclasses with a `to_json()` each, so a report can be written, read back and
compared without the code that made it.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field


class CheckName(str, enum.Enum):
    """Every check the gate makes of a substrate, in the order it makes them."""

    IMPORT_SAFE = "import_safe"
    CANDIDATE_FILE = "candidate_file"
    REGISTRATION = "registration"
    OFFICIAL_REFERENCE = "official_reference"
    CUDA_SOURCE = "cuda_source"
    COMPILE = "compile"
    SUITES_BUILD = "suites_build"
    SUITE_RULES = "suite_rules"
    PROBE_RULES = "probe_rules"
    LAUNCH_ARGUMENTS = "launch_arguments"
    REF_MATCHES_OFFICIAL = "ref_matches_official"
    OUTPUT_MATCHES = "output_matches"
    OUTPUT_FULLY_WRITTEN = "output_fully_written"
    # An accumulating entry's launch must hand the kernel an initialised out (zeros), not whatever memory held.
    OUT_INITIALISED = "out_initialised"
    WRITES_IN_BOUNDS = "writes_in_bounds"
    INPUTS_UNCHANGED = "inputs_unchanged"
    RUNS_TO_COMPLETION = "runs_to_completion"
    FITS_DEVICE_MEMORY = "fits_device_memory"
    FITS_HOST_MEMORY = "fits_host_memory"
    NO_FALSE_KILL = "no_false_kill"
    SUITES_CAN_FAIL = "suites_can_fail"
    # The kernel under compute-sanitizer's tools (harness.oracles.sanitizer), after the pipeline.
    MEMCHECK = "memcheck"
    RACECHECK = "racecheck"
    SYNCCHECK = "synccheck"
    INITCHECK = "initcheck"


SANITIZER_CHECKS = (CheckName.MEMCHECK, CheckName.RACECHECK, CheckName.SYNCCHECK, CheckName.INITCHECK)
PIPELINE_CHECKS = tuple(c for c in CheckName if c not in SANITIZER_CHECKS)


class CheckStatus(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    # An earlier failure (a compile error, a CUDA fault) kept this check from running.
    NOT_RUN = "not_run"
    # Not run here by choice or for want of a tool (--no-sanitize, the CPU backend, no
    # compute-sanitizer): no verdict either way, and no bar to admission. The detail says why.
    SKIPPED = "skipped"


@dataclass
class CheckResult:
    check: CheckName
    status: CheckStatus
    detail: str = ""

    @property
    def ok(self) -> bool | None:
        return {CheckStatus.PASSED: True, CheckStatus.FAILED: False}.get(self.status)

    def to_json(self) -> dict:
        return {"check": self.check.value, "ok": self.ok, "status": self.status.value, "detail": self.detail}


def with_not_run(checks: list[CheckResult], why: str) -> list[CheckResult]:
    """`checks` completed with every other check, marked not run for `why`, in CheckName order."""
    done = {c.check for c in checks}
    return checks + [CheckResult(c, CheckStatus.NOT_RUN, why) for c in CheckName if c not in done]


@dataclass
class SuiteResult:
    """How one suite (or the probe) went: trials run, trials passed, and the worst seen."""

    name: str
    trials: int
    passed: int = 0
    # Bitwise comparisons count differing elements; tolerance comparisons keep the worst error.
    mismatched_elements: int = 0
    worst_abs_error: float | None = None
    worst_rel_error: float | None = None
    failures: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


class Verdict(str, enum.Enum):
    ADMITTED = "admitted"
    REJECTED = "rejected"


@dataclass
class SubstrateReport:
    name: str
    file: str
    checks: list[CheckResult] = field(default_factory=list)
    suites: list[SuiteResult] = field(default_factory=list)
    seconds: float = 0.0
    source_sha256: str = ""
    kb_file: str = ""
    compile_options: list[str] = field(default_factory=list)
    peak_device_bytes: int | None = None  # the worker's peak device memory, where the backend can tell
    phase_seconds: dict[str, float] = field(default_factory=dict)  # harness.gate.phases: where the time went
    phase_calls: dict[str, dict] = field(default_factory=dict)  # each phase's {"calls": n, "longest": s}
    phase_trace: list[dict] = field(default_factory=list)  # every call, where the gate was traced (PhaseClock.trace)

    @property
    def verdict(self) -> Verdict:
        if any(c.status is CheckStatus.PASSED for c in self.checks) and all(
                c.status in (CheckStatus.PASSED, CheckStatus.SKIPPED) for c in self.checks):
            return Verdict.ADMITTED
        return Verdict.REJECTED

    def with_checks(self, results: list[CheckResult]) -> "SubstrateReport":
        """This report with `results` in place of the checks of the same names, in CheckName order."""
        replaced = {r.check: r for r in results}
        kept = [c for c in self.checks if c.check not in replaced]
        order = list(CheckName)
        self.checks = sorted(kept + list(replaced.values()), key=lambda c: order.index(c.check))
        return self

    @property
    def admitted(self) -> bool:
        return self.verdict is Verdict.ADMITTED

    def reasons(self) -> list[str]:
        """Every failed check, as 'check: detail' lines (the checks not run, when none failed); empty when admitted."""
        failed = [f"{c.check.value}: {c.detail}" for c in self.checks if c.status is CheckStatus.FAILED]
        if failed or self.admitted:
            return failed
        return [f"{c.check.value}: {c.detail}" for c in self.checks if c.status is CheckStatus.NOT_RUN]

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "admitted": self.admitted,
            "file": self.file,
            "kb_file": self.kb_file,
            "source_sha256": self.source_sha256,
            "compile_options": self.compile_options,
            "checks": [c.to_json() for c in self.checks],
            "suites": [s.to_json() for s in self.suites],
            "seconds": round(self.seconds, 3),
            "peak_device_bytes": self.peak_device_bytes,
            "phase_seconds": self.phase_seconds,
            "phase_calls": self.phase_calls,
            **({"phase_trace": self.phase_trace} if self.phase_trace else {}),
        }

    @classmethod
    def from_json(cls, data: dict) -> "SubstrateReport":
        return cls(
            name=data["name"],
            file=data["file"],
            kb_file=data.get("kb_file", ""),
            source_sha256=data.get("source_sha256", ""),
            compile_options=list(data.get("compile_options", [])),
            checks=[
                CheckResult(CheckName(c["check"]), CheckStatus(c["status"]), c["detail"]) for c in data["checks"]
            ],
            suites=[SuiteResult(**s) for s in data["suites"]],
            seconds=data["seconds"],
            peak_device_bytes=data.get("peak_device_bytes"),
            phase_seconds=dict(data.get("phase_seconds", {})),
            phase_calls=dict(data.get("phase_calls", {})),
            phase_trace=list(data.get("phase_trace", [])),
        )


@dataclass
class GateReport:
    backend: str
    device: str
    substrates: list[SubstrateReport] = field(default_factory=list)
    interrupted: str = ""  # the signal that stopped the run ("SIGINT"); the report then holds what finished before it
    not_gated: list[str] = field(default_factory=list)  # with `interrupted` or `running`: those not finished
    running: bool = False  # written while the gate runs: what finished so far, its sanitizer checks pending

    def to_json(self) -> dict:
        data = {
            "backend": self.backend,
            "device": self.device,
            "admitted": sum(s.admitted for s in self.substrates),
            "rejected": sum(not s.admitted for s in self.substrates),
            "substrates": [s.to_json() for s in self.substrates],
        }
        if self.interrupted:
            data["incomplete"] = {"interrupted_by": self.interrupted, "not_gated": self.not_gated}
        elif self.running:
            data["incomplete"] = {"still_running": True, "not_gated": self.not_gated}
        return data
