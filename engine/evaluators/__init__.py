"""Evaluators: each kind of verdict is one module of this package (see `engine.evaluators.base`)."""
