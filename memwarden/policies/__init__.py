"""Casbin model and policies, namespace canonicalisation, decisions, read-filter pushdown."""
