"""The frames the docs show of the paper's environments (docs/running.md): each as `--video` records it.

    python docs/frames.py        # writes docs/img/envs/<name>.png; tests/test_docs.py checks they are current

A frame is the environment's own `render()` (`render_mode="rgb_array"`) after up to STEPS uniform actions from
seed 0 (fewer where the episode ends first: the last frame before its end)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from actors.envs import families, make_env  # noqa: E402  (the checkout's, not an installed copy)
from beta_dqn.configuration.errors import OneLineParser  # noqa: E402

STEPS = 12
FOLDER = ROOT / "docs" / "img" / "envs"


def known_names() -> list[str]:
    """The paper's environments: the built-in families' names (a family of yours, named in BETA_DQN_ENVS, is not
    drawn here)."""
    return [name for family in families() if family.trusted for name in family.names]


def file_name(env: str) -> str:
    return env.replace("/", "-") + ".png"


def frame(env: str) -> np.ndarray:
    """`env`'s frame, uint8 (height, width, 3), the same on every machine (seeded actions and environment)."""
    made = make_env(env, seed=0, render_mode="rgb_array")
    made.reset(seed=0)
    rng = np.random.default_rng(0)
    shown = made.render()
    for _ in range(STEPS):
        _, _, terminated, truncated, _ = made.step(int(rng.integers(made.action_space.n)))
        if terminated or truncated:
            break
        shown = made.render()
    made.close()
    return np.asarray(shown, dtype=np.uint8)


def main() -> None:
    from PIL import Image

    FOLDER.mkdir(parents=True, exist_ok=True)
    for env in known_names():
        Image.fromarray(frame(env)).save(FOLDER / file_name(env), optimize=True)
        print(FOLDER.relative_to(ROOT) / file_name(env))


if __name__ == "__main__":
    OneLineParser.script("python docs/frames.py", __doc__).parse_args()  # --help; no options
    main()
