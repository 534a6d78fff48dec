"""Deterministic synthetic M3-Bench trajectories for the demo, the tests and the benchmarks.

An invented catalogue of MCP-style tools ("server/tool") and task families is used to build
reference (ground-truth) trajectories; an `ErrorProfile` then perturbs them into prediction
trajectories with controlled error rates. Everything is driven by seeded numpy Generators, so a
given seed always yields the same data. Nothing here is part of the scoring path.
"""

from engine.synthetic.demo import demo_models, demo_records, scale_predictions, write_demo
from engine.synthetic.families import make_reference
from engine.synthetic.perturb import PROFILES, ErrorProfile, perturb

__all__ = ["ErrorProfile", "PROFILES", "make_reference", "perturb", "demo_models", "demo_records", "write_demo",
           "scale_predictions"]
