"""Command-line apps of the scoring side: score (Hydra), report and calibrate."""
