"""Tensor kernels of the scoring engine: similarity, bucketed assignment, segment reductions."""
