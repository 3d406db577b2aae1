"""Principal binding: who the LangGraph store acts as while a graph node runs.

A ``BaseStore`` call carries no caller identity, yet every memwarden operation needs one. The
identity therefore travels in a context variable, :data:`current_principal`, which
:class:`~memwarden.integrations.store.GovernedStore` reads on every batch. Three ways set it:

- :func:`bind_principal`, a context manager, for code that calls the store directly;
- :func:`as_principal`, which wraps a node function so that it always runs as one principal;
- :func:`governed_node`, which wraps a node function so that it runs as the principal the
  graph was invoked with, ``config["configurable"]["memwarden_principal"]``.

The binding follows the context, which a ``ThreadPoolExecutor`` worker does not inherit:
:func:`carry_principal` wraps a function so that it runs there as the principal bound where it
was wrapped (``pool.submit(carry_principal(work), item)``).

Nothing is ever assumed: with no principal bound, the store raises :class:`Unbound`, an
AccessDenied (fail closed).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar, Union

from langgraph.config import get_config

from memwarden.core.errors import AccessDenied, InvalidRequest
from memwarden.core.records import Principal

__all__ = [
    "CONFIG_KEY",
    "PrincipalLike",
    "Unbound",
    "as_principal",
    "bind_principal",
    "carry_principal",
    "current_principal",
    "governed_node",
    "require_principal",
    "to_principal",
]

#: The ``configurable`` key :func:`governed_node` reads the principal from.
CONFIG_KEY = "memwarden_principal"

#: A Principal, or a mapping ``{"id": ..., "roles": [...]}`` that builds one.
PrincipalLike = Union[Principal, Mapping[str, Any]]

#: The principal the governed store acts as in the current context (None: nobody, so denied).
current_principal: ContextVar[Principal | None] = ContextVar("memwarden_principal", default=None)

F = TypeVar("F", bound=Callable[..., Any])

#: The one line that binds a principal, as the Unbound error shows it.
BIND_LINE = 'with bind_principal(Principal("alice", roles=["physician"])): ...'


class Unbound(AccessDenied):
    """A store operation ran with no principal bound in its context (fail closed).

    The message says so and shows the line that binds one; a node wrapped with
    :func:`as_principal` or :func:`governed_node` never raises it.
    """


def to_principal(value: object) -> Principal:
    """A Principal from a Principal or a mapping with ``id`` and optional ``roles``.

    Raises InvalidRequest for anything else, including a mapping with unexpected keys, so a
    typo such as ``"role"`` is an error rather than a principal silently without roles.
    """
    if isinstance(value, Principal):
        return value
    if isinstance(value, Mapping):
        unexpected = set(value) - {"id", "roles"}
        if "id" not in value or unexpected:
            raise InvalidRequest(f"a principal mapping needs 'id' and may have 'roles'; got keys {sorted(value)}")
        return Principal(value["id"], roles=value.get("roles", ()))
    raise InvalidRequest(f"expected a memwarden Principal or a mapping, got {type(value).__name__}")


def require_principal() -> Principal:
    """The principal bound in this context; AccessDenied when there is none."""
    principal = current_principal.get()
    if principal is None:
        raise Unbound(f"no principal is bound to the memory store in this context; bind one: {BIND_LINE} "
                      "(graph nodes: @as_principal(...) or @governed_node; another thread: "
                      "pool.submit(carry_principal(fn), ...))")
    return principal


@contextmanager
def bind_principal(principal: PrincipalLike) -> Iterator[Principal]:
    """Act as ``principal`` inside the ``with`` block; the previous binding comes back after it.

    The binding follows the context: ``asyncio`` tasks and ``asyncio.to_thread`` inherit it,
    a bare ``threading.Thread`` does not (and is then denied).
    """
    bound = to_principal(principal)
    token = current_principal.set(bound)
    try:
        yield bound
    finally:
        current_principal.reset(token)


def carry_principal(fn: F) -> F:
    """``fn``, to run in another thread (a ``ThreadPoolExecutor``'s, a ``threading.Thread``)
    as the principal bound here, now: ``pool.submit(carry_principal(work), item)``.

    Each call runs in a fresh copy of the context captured at wrapping time, so the wrapped
    function may run in many threads at once, and what it binds never leaks back. A later
    rebinding in the wrapping thread does not change whom it acts as.
    """
    captured = contextvars.copy_context()

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        return captured.copy().run(fn, *args, **kwargs)

    return run  # type: ignore[return-value]


def _principal_from_config() -> Principal:
    try:
        config = get_config()
    except RuntimeError:
        raise Unbound("no principal is bound: a governed_node ran outside a LangGraph run") from None
    value = (config.get("configurable") or {}).get(CONFIG_KEY)
    if value is None:
        raise Unbound(f"no principal is bound: the run config has no configurable[{CONFIG_KEY!r}]; invoke with "
                      f'{{"configurable": {{"{CONFIG_KEY}": {{"id": "alice", "roles": ["physician"]}}}}}}')
    return to_principal(value)


def _bound(fn: F, resolve: Callable[[], Principal]) -> F:
    # functools.wraps keeps fn's signature visible (via __wrapped__), so LangGraph still
    # injects config, store, runtime and writer exactly as it would into fn itself.
    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            with bind_principal(resolve()):
                return await fn(*args, **kwargs)

        return run_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with bind_principal(resolve()):
            return fn(*args, **kwargs)

    return run  # type: ignore[return-value]


def as_principal(principal: PrincipalLike) -> Callable[[F], F]:
    """Decorator: the wrapped node (sync or async) always runs as ``principal``.

    ``@as_principal(Principal("bob", roles=["nurse"]))`` over ``def node(state)`` or
    ``def node(state, config)``; the signature is unchanged, so LangGraph injects arguments
    into the wrapper as it would into the node.
    """
    fixed = to_principal(principal)
    return lambda fn: _bound(fn, lambda: fixed)


def governed_node(fn: F) -> F:
    """Wrap a node (sync or async) to run as ``config["configurable"]["memwarden_principal"]``.

    The principal (a Principal or ``{"id": ..., "roles": [...]}``) is read from the run config
    on every call, so one compiled graph serves many principals. Whoever invokes the graph
    chooses it: set it in trusted application code, never from user or model input. A run
    without it raises AccessDenied.
    """
    return _bound(fn, _principal_from_config)
