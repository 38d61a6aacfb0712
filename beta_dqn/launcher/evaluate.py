"""`python -m learner.evaluate RUN_DIR`: a run's evaluation policy, from its last (or best) checkpoint, for N episodes.

    python -m learner.evaluate runs/CartPole-v1_dqn_s0 --episodes 10
    python -m learner.evaluate runs/CartPole-v1_dqn_s0 --checkpoint best   # the networks of its best evaluation
    python -m learner.evaluate runs/CartPole-v1_dqn_s0 --episodes 3 --video videos/cartpole   # where it renders

The same as `beta_dqn.load(RUN_DIR).evaluate(...)`: ε as the run's own evaluations (`--eval-epsilon`)
unless --epsilon says otherwise; environment and rng seeds from --seed. What it executes: this project and the
installed packages; a module that the run's environment names (`module:Id`) only with --env or --trust-run.
"""

from __future__ import annotations

import json
import sys

from actors.envs import EnvFailed
from beta_dqn.configuration.cli import read_bool
from beta_dqn.configuration.errors import OneLineParser, user_error

PROG = "python -m learner.evaluate"


def main(argv: list[str] | None = None) -> int:
    p = OneLineParser(prog=PROG, description=__doc__.splitlines()[0])
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run's directory (its checkpoint.pt, or best.pt)")
    p.add_argument("--checkpoint", choices=("last", "best"), default="last",
                   help="last: the run's last checkpoint (checkpoint.pt, a finished run's final networks); best: the "
                        "networks of its best evaluation so far (best.pt: the highest score, the earliest of a tie)")
    p.add_argument("--episodes", type=int, default=10, help="episodes to play (default: 10)")
    p.add_argument("--seed", type=int, default=0, help="seed of the environment and of ε's draws (default: 0)")
    p.add_argument("--epsilon", type=float, default=None, help="probability of a uniform action (default: the "
                                                               "run's --eval-epsilon)")
    p.add_argument("--video", default=None, metavar="DIR", help="record each episode there (a new or empty "
                                                                "directory; the env must render rgb_array)")
    p.add_argument("--json", type=read_bool, default=False, help="the result as JSON on stdout (default: false)")
    p.add_argument("--env", default=None, metavar="MODULE:ID",
                   help="the run's own environment, where it is a module's (module:Id): naming it says to import "
                        "that module, which runs its code. Without it (or --trust-run) a run whose environment is a "
                        "module's is refused: a run folder is data, and what it names is not imported. The "
                        "project's own environments and registered Gymnasium ids need neither")
    p.add_argument("--trust-run", action="store_true",
                   help="import the module the run's environment names (module:Id) without naming it, and apply its "
                        "--wrappers: only for a run you made or trust, as it runs that code")
    args = p.parse_args(argv)
    if not 1 <= args.episodes <= 100_000:
        p.error(f"--episodes {args.episodes}: give a whole number from 1 to 100,000")
    if not 0 <= args.seed < 2**32:
        p.error(f"--seed {args.seed}: give a whole number from 0 to 2**32 - 1")
    if args.epsilon is not None and not 0.0 <= args.epsilon <= 1.0:
        p.error(f"--epsilon {args.epsilon}: give a probability from 0 to 1")
    from beta_dqn.launcher.api import load  # (after the command line: torch's import takes seconds)

    try:
        agent = load(args.run_dir, env=args.env, trust_run=args.trust_run, checkpoint=args.checkpoint)
        result = agent.evaluate(episodes=args.episodes, seed=args.seed, video_dir=args.video, epsilon=args.epsilon)
    except ValueError as e:  # ConfigError too: an unreadable run, a bad number, a video that cannot be made
        return user_error(PROG, str(e))
    except EnvFailed as e:  # the environment's own failure while it played
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"run_dir": args.run_dir, "env": agent.spec.name, "algo": agent.config.algo,
                          "checkpoint": agent.checkpoint, "env_steps": agent.env_steps, **result}, indent=2))
        return 0
    success = "" if result["success_rate"] is None else f", success {result['success_rate']:.2f}"
    video = f"; video in {result['video_dir']}" if "video_dir" in result else ""
    which = " (its best evaluation's networks)" if agent.checkpoint == "best" else ""
    print(f"{agent.config.algo} on {agent.spec.name} after {agent.env_steps:,} env steps{which}: return "
          f"{result['return_mean']:.2f} ± {result['return_std']:.2f} over {result['episodes']} episodes{success}"
          f"{video}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
