"""Oracles that judge a kernel by more than its output values: compute-sanitizer's tools (sanitizer)."""
