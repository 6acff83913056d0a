"""Benchmarks run by `fabula bench ...`, each with its baselines in the same run."""
