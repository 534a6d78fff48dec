"""Score predicted tool-call trajectories against M3-Bench references.

    python scripts/score.py                               # built-in demo leaderboard
    python scripts/score.py model=gpt5 data=m3bench       # one published prediction file
    python scripts/score.py data.gt=G model.predictions=P output_dir=D
    python scripts/score.py data.gt=G 'sweep.predictions=[P1,P2]' output_dir=D
    python scripts/score.py -m align.tau_weak=0.5,0.6,0.7  # Hydra multirun
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hydra  # noqa: E402
from omegaconf import DictConfig  # noqa: E402

from engine.cli import run  # noqa: E402


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    """Hydra entry point."""
    code = run(cfg)
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
