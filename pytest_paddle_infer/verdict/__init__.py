"""Verdicts: pure numpy metrics, tolerances and the comparison of outputs and tensors."""
