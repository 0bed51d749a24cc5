"""Audits of benchmarks and judges."""
