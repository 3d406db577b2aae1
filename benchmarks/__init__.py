"""Benchmarks (run from a source checkout); see README.md here."""
