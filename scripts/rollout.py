"""Roll out an agent over MCP servers: ``python scripts/rollout.py model=gpt5`` (see rollout/README.md).

Bad input ends the run with one line on stderr and exit status 2; a run where some tasks failed
exits with 1 (run it again to retry them), else 0.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import hydra  # noqa: E402
from omegaconf import DictConfig, OmegaConf  # noqa: E402

from engine.contract import InputError  # noqa: E402
from rollout.config import rollout_config  # noqa: E402
from rollout.runner import run  # noqa: E402


@hydra.main(config_path="../conf", config_name="rollout", version_base="1.3")
def main(cfg: DictConfig) -> None:
    """Run the configured stage(s) and exit with their status."""
    try:
        status = run(OmegaConf.to_container(cfg, resolve=True))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    sys.exit(status)


if __name__ == "__main__":
    with rollout_config():
        main()
