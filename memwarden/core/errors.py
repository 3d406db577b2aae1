"""The exceptions memwarden raises at its public edge.

Each one subclasses the builtin a caller would naturally catch (``ValueError`` for bad input,
``PermissionError`` for a denial), so code written against plain Python keeps working.
"""

from __future__ import annotations


class MemwardenError(Exception):
    """Base class of every error memwarden raises on purpose."""


class InvalidRequest(MemwardenError, ValueError):
    """The request is malformed; raised before any policy or storage work is done."""


class NotFound(InvalidRequest):
    """No record with that id is visible to the caller; a missing record and one the caller
    may not read look exactly alike, so the error is no existence oracle."""


class AccessDenied(MemwardenError, PermissionError):
    """Policy denies the operation (deny by default, deny overrides allow).

    ``rule`` names the policy line that decided, or is ``None`` when no rule matched.
    """

    def __init__(self, message: str, *, rule: str | None = None) -> None:
        super().__init__(message)
        self.rule = rule


class WriteRejected(MemwardenError):
    """A write validator rejected the content; nothing was stored.

    ``verdicts`` carries every validator verdict that was reached, in chain order.
    """

    def __init__(self, message: str, *, verdicts: tuple = ()) -> None:
        super().__init__(message)
        self.verdicts = verdicts


class HeldForReview(MemwardenError):
    """Raised, when the caller opted in, for a write that was stored but held for review
    (quarantined): it is invisible to every search and get until reviewers approve it.

    Not a failure of the write: the memory is kept. The LangGraph store raises it in strict
    mode (``Memory.as_store(strict=True)``, or inside ``strict_outcomes()``) once its batch has
    run, so nothing after the held put is skipped. ``ids`` are the held records' ids, and
    ``results`` the batch's results in order.
    """

    def __init__(self, message: str, *, ids: tuple[str, ...] = (), results: tuple = ()) -> None:
        super().__init__(message)
        self.ids = ids
        self.results = results


class PolicyError(MemwardenError, ValueError):
    """A policy file or rule is malformed; the message names the line."""


class AuditError(MemwardenError):
    """The audit log could not be written; the operation fails closed."""


class ProofError(MemwardenError, ValueError):
    """A signed document (an erasure receipt, an audit head, a file of public keys) is
    unreadable, malformed or does not verify; the message says which and where."""


class SignatureInvalid(ProofError):
    """A signed document is well formed but does not verify: it was changed after signing,
    or it was signed by a key that is not among the keys given (another store's)."""


class StoreLocked(MemwardenError):
    """Another process has the embedded data directory open (see docs/deployment.md).

    ``holders`` lists the process ids that hold it, when they can be known.
    """

    def __init__(self, message: str, *, holders: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.holders = holders


class ReadOnlyError(MemwardenError, PermissionError):
    """The memory was opened with ``read_only=True`` and the operation would change it."""


class StoreFormatError(MemwardenError):
    """The data directory's format is not one this memwarden can open (a newer store, or an
    older one that needs a migration a read-only open cannot run)."""
