"""The namespaces of a governed LangGraph store: memwarden's canonical namespaces
(:mod:`memwarden.core.namespace`: NFKC, label rules) with LangGraph's store rules on top.

LangGraph's stores refuse a label with a "." (their SQL stores keep namespaces as dotted text),
and ``put``/``aput`` refuse the root label "langgraph", which LangGraph reserves for its own
items and writes itself through ``batch``. So the root is refused where LangGraph refuses it,
by the convenience methods, and ``batch`` accepts it.

Every refusal is an :class:`InvalidStoreNamespace`: an InvalidRequest, as everywhere in
memwarden, and LangGraph's ``InvalidNamespaceError``, which code written for LangGraph's stores
catches around ``put``.
"""

from __future__ import annotations

from langgraph.store.base import InvalidNamespaceError

from memwarden.core.errors import InvalidRequest
from memwarden.core.namespace import Namespace, canonical_label, canonical_namespace, split_namespace

__all__ = ["RESERVED_ROOT", "InvalidStoreNamespace", "match_path", "put_namespace", "store_namespace"]

#: The root label LangGraph's ``put`` refuses.
RESERVED_ROOT = "langgraph"


class InvalidStoreNamespace(InvalidRequest, InvalidNamespaceError):
    """A store namespace or match path that memwarden or LangGraph refuses; the message says
    which label and why."""


def store_namespace(value: object, what: str, *, allow_empty: bool = False) -> Namespace:
    """``value`` as a canonical namespace that keeps LangGraph's label rules."""
    try:
        namespace = canonical_namespace(value, allow_empty=allow_empty, what=what)
    except InvalidRequest as exc:
        raise InvalidStoreNamespace(str(exc)) from None
    for i, label in enumerate(namespace):
        _no_dot(label, f"{what} label {i}")
    return namespace


def put_namespace(value: object) -> Namespace:
    """The namespace of a ``put``/``aput``: a store namespace whose root (once folded, so that
    a confusable spelling is refused too) is not LangGraph's reserved one."""
    namespace = store_namespace(value, "namespace")
    if namespace[0] == RESERVED_ROOT:
        raise InvalidStoreNamespace(f"namespace may not start with {RESERVED_ROOT!r} in put "
                                    "(LangGraph reserves that root; its own items go through batch)")
    return namespace


def match_path(value: object, what: str) -> tuple[str, ...]:
    """A list_namespaces match path: labels or "*", as a tuple or an "a/*/c" string."""
    try:
        parts = split_namespace(value, what=what)
        labels = tuple(p if p == "*" else canonical_label(p, what=f"{what} label {i}") for i, p in enumerate(parts))
    except InvalidRequest as exc:
        raise InvalidStoreNamespace(str(exc)) from None
    for i, label in enumerate(labels):
        _no_dot(label, f"{what} label {i}")
    return labels


def _no_dot(label: str, what: str) -> None:
    if "." in label:
        raise InvalidStoreNamespace(f"{what} {label!r} contains '.', which LangGraph store namespaces may not")
