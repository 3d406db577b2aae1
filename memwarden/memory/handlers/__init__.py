"""The operation handlers: one small module per family of operations.

A handler is two functions. ``need(op, ctx)`` declares what the operation needs (a
namespace, a record or a scope, with the action: :mod:`memwarden.memory.needs`), from the
operation alone. ``run(op, got, ctx)`` gets what the pipeline resolved for that need and
returns the result and the effects (:mod:`memwarden.memory.effects`) the pipeline is to apply.
Handlers import neither the policy engine nor a backend: everything goes through ``ctx``
(:class:`~memwarden.memory.context.OpContext`).
"""
