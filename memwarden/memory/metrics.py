"""OpenTelemetry metrics for memory operations, on the API only.

The pipeline calls :func:`record_operation` once per operation, after its audit entry. With
no MeterProvider configured that call returns after one type check: no instrument is
created and no attribute is built. Once an application installs a MeterProvider (globally,
or for memwarden alone with :func:`set_meter_provider`), these instruments report:

=================================  =========  ============  ====================================
instrument                         kind       unit          attributes
=================================  =========  ============  ====================================
``memwarden.operations``           counter    {operation}   op, outcome, decision, gen_ai name
``memwarden.denials``              counter    {operation}   op (policy said no: AccessDenied)
``memwarden.rejections``           counter    {operation}   op (a validator rejected a write)
``memwarden.quarantines``          counter    {record}      op (stored, but quarantined)
``memwarden.erasures``             counter    {operation}   (successful erase operations)
``memwarden.erased_records``       counter    {record}      (records those erasures removed)
``memwarden.operation.duration``   histogram  s             op, outcome, gen_ai name
=================================  =========  ============  ====================================

Attribute values are low-cardinality by construction: no principal, namespace or record id
goes onto a metric (those belong on spans and in the audit log).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import Counter, Histogram, MeterProvider, NoOpMeterProvider

try:  # the API's stand-in provider before any is set; private, so guarded
    from opentelemetry.metrics._internal import _ProxyMeterProvider as _Proxy
except ImportError:  # pragma: no cover - other API versions
    _Proxy = NoOpMeterProvider

from memwarden.memory.tracing import SPAN_NAMES

METER_NAME = "memwarden"
#: Bucket boundaries (seconds) for the duration histogram: 0.5 ms to 10 s.
DURATION_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

_NO_PROVIDER = (NoOpMeterProvider, _Proxy)


@dataclass(frozen=True, slots=True)
class _Instruments:
    operations: Counter
    denials: Counter
    rejections: Counter
    quarantines: Counter
    erasures: Counter
    erased_records: Counter
    duration: Histogram


_provider: MeterProvider | None = None
_cache: tuple[MeterProvider, _Instruments] | None = None


def set_meter_provider(provider: MeterProvider | None) -> None:
    """Report memwarden's metrics to ``provider`` instead of the global one (None: global)."""
    global _provider, _cache
    _provider, _cache = provider, None


def enabled() -> bool:
    """Whether a real MeterProvider is in place (otherwise recording is skipped entirely)."""
    provider = _provider if _provider is not None else metrics.get_meter_provider()
    return not isinstance(provider, _NO_PROVIDER)


def _instruments() -> _Instruments | None:
    global _cache
    provider = _provider if _provider is not None else metrics.get_meter_provider()
    if isinstance(provider, _NO_PROVIDER):
        return None
    if _cache is not None and _cache[0] is provider:
        return _cache[1]
    meter = provider.get_meter(METER_NAME)
    try:
        duration = meter.create_histogram("memwarden.operation.duration", unit="s",
                                          description="Duration of governed memory operations",
                                          explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS))
    except TypeError:  # pragma: no cover - API before 1.23 has no advisory
        duration = meter.create_histogram("memwarden.operation.duration", unit="s",
                                          description="Duration of governed memory operations")
    made = _Instruments(
        operations=meter.create_counter("memwarden.operations", unit="{operation}",
                                        description="Governed memory operations, by kind, outcome and decision"),
        denials=meter.create_counter("memwarden.denials", unit="{operation}",
                                     description="Operations the policy denied"),
        rejections=meter.create_counter("memwarden.rejections", unit="{operation}",
                                        description="Writes a validator rejected"),
        quarantines=meter.create_counter("memwarden.quarantines", unit="{record}",
                                         description="Writes stored as quarantined (invisible until approved)"),
        erasures=meter.create_counter("memwarden.erasures", unit="{operation}",
                                      description="Completed erasures (right to be forgotten)"),
        erased_records=meter.create_counter("memwarden.erased_records", unit="{record}",
                                            description="Records removed by erasures, cascades included"),
        duration=duration,
    )
    _cache = (provider, made)
    return made


def _outcome_value(verdict: Any) -> str:
    value = getattr(verdict, "outcome", verdict)  # a Verdict, an Outcome or a plain string
    return str(getattr(value, "value", value))


def record_operation(op: str, outcome: str, decision: str | None, verdicts: Iterable[Any] = (),
                     duration: float = 0.0, *, records: int | None = None) -> None:
    """Count one finished operation and its duration; call once per operation.

    ``op`` is the memwarden action ("write", "search", ...), ``outcome`` one of ok, denied,
    rejected, invalid, error; ``decision`` allow, deny or None; ``verdicts`` the validator
    verdicts (Verdict objects, Outcome values or their strings); ``duration`` in seconds;
    ``records`` the number of records an erase removed.
    """
    inst = _instruments()
    if inst is None:
        return
    name = SPAN_NAMES.get(op, op)
    base = {"memwarden.operation": op}
    inst.operations.add(1, {**base, "gen_ai.operation.name": name, "memwarden.outcome": outcome,
                            "memwarden.decision": decision or "none"})
    inst.duration.record(max(0.0, float(duration)), {**base, "gen_ai.operation.name": name,
                                                     "memwarden.outcome": outcome})
    if outcome == "denied":
        inst.denials.add(1, base)
    elif outcome == "rejected":
        inst.rejections.add(1, base)
    elif outcome == "ok":
        if op in ("write", "update") and any(_outcome_value(v) == "quarantine" for v in verdicts):
            inst.quarantines.add(1, base)
        if op == "erase":
            inst.erasures.add(1)
            if records:
                inst.erased_records.add(int(records))
