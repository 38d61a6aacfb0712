"""The Python API (public as `beta_dqn`): train a run, load a finished (or stopped) one, act with its
evaluation policy, evaluate it.

    from beta_dqn import train, load

    run = train(env="CartPole-v1", algo="dqn", total_steps=20_000, runtime="serial", out="runs/cartpole")
    run.summary["final_eval"]["return_mean"], run.run_dir
    agent = load("runs/cartpole")                            # or load(..., checkpoint="best"): its best evaluation's
    action = agent.act(obs)                                  # the method's evaluation policy, greedy (or a batch)
    agent.q_values(obs)                                      # Q(s, ·); β-DQN's β(· | s): agent.behaviour(obs)
    agent.evaluate(episodes=10, seed=0, video_dir="videos")  # scores; a video per episode where the env renders

`train` takes the command line's settings as keywords (`total_steps=20_000` is `--total-steps 20000`) or as
a `beta_dqn.configuration.fields.Config` (and `config="hp.toml"`: a `--config` file under them), runs one run as
`python -m learner.main` does (the same checks, the same outputs in its directory) and returns its summary and
directory. `load` reads a run directory's `checkpoint.pt`, or its `best.pt` (tensors and plain data only: nothing
is unpickled), on the CPU. The shell's form of `evaluate` is `python -m learner.evaluate RUN_DIR`.
"""

from __future__ import annotations

import difflib
import json
import os
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from actors.envs import EnvFailed, EnvSpec, UnknownEnvError, env_spec, make_env
from actors.evaluator import play
from beta_dqn.configuration import config_file
from beta_dqn.configuration.compat import read_as_it_ran
from beta_dqn.configuration.flags import FIELDS, Config, ConfigError, fit_warning, fits, kinds, resolve, settings
from beta_dqn.driver.state import read_checkpoint
from beta_dqn.files import write_error
from learner.methods import acting
from learner.methods.numpy_net import NumpyNet, unflatten
from learner.methods.reading import ReadingError, size_warning

__all__ = ["Agent", "Trained", "load", "train"]


@dataclass(frozen=True)
class Trained:
    """What `train` returns: the run's summary (`summary.json`'s content) and its directory."""

    summary: dict
    run_dir: Path


def train(config: Config | None = None, /, **flags) -> Trained:
    """One run, from a `Config` or the command line's flags as keywords (both: the keywords replace the config's
    fields). Nothing goes to W&B unless asked (`wandb="offline"` or `"online"`). A mistake is a `ConfigError`
    whose message is the command line's one line; a value of a list (a grid's axis) is refused: a grid runs from
    the shell (`python -m learner.main --seeds 0-4 ...`)."""
    unknown = sorted(set(flags) - set(FIELDS))
    if unknown:
        guesses = [f"{u}: did you mean {close[0]}?" for u in unknown
                   if (close := difflib.get_close_matches(u, FIELDS, n=1, cutoff=0.75))]
        raise TypeError(f"train() got unknown settings {', '.join(unknown)}"
                        f"{' (' + '; '.join(guesses) + ')' if guesses else ''}; the settings are the flags of "
                        "python -m learner.main with '_' for '-' (Config's fields and every part's own) "
                        "(total_steps=20_000 for --total-steps 20000)")
    if isinstance(flags.get("env_kwargs"), dict):  # the natural Python form of --env-kwargs
        flags["env_kwargs"] = json.dumps(flags["env_kwargs"])
    if isinstance(flags.get("wrappers"), (list, dict)):  # and of --wrappers
        flags["wrappers"] = json.dumps(flags["wrappers"])
    flags = {name: _plain(name, value) for name, value in flags.items()}
    for name, value in flags.items():
        _check_type(name, value)
    cfg = (config or Config()).replaced(**flags)
    if cfg.config:  # a configuration file under the settings given here (`config="hp.toml"`), as on the command line
        given = set(flags) | {f for f in FIELDS if config is not None and config.value(f) != FIELDS[f].default}
        values, sections, _ = config_file.apply(cfg.flat(), frozenset(given))
        axis = next((k for k, v in values.items() if isinstance(v, list)), None)
        if axis:
            raise ConfigError(axis, f"{cfg.config} lists values (a grid axis): train() runs one run; a grid runs "
                                    "from the shell (python -m learner.main --config FILE)")
        cfg = Config.of(**config_file.for_run(values, sections))
    if not cfg.wandb:  # from Python, nothing is tracked unless asked (WANDB_MODE is the command line's default)
        cfg = cfg.replaced(wandb="disabled")
    for name in ("seeds", "resume", "pack_seeds"):
        if cfg.value(name) != FIELDS[name].default:
            raise ConfigError(name, f"{cfg.value(name)!r}: train() runs one run from its start; a grid, packed "
                                    "seeds or a resume run from the shell (python -m learner.main)")
    cfg, spec = resolve(cfg)
    from beta_dqn.driver.run import train as run_training
    from beta_dqn.driver.state import check_run_dir

    check_run_dir(Path(cfg.out), False, cfg.overwrite)
    for warning in (fit_warning(cfg), size_warning(spec.obs_shape, spec.reading, spec.n_actions)):
        if warning:
            warnings.warn(warning.removeprefix("warning: "), stacklevel=2)
    summary = run_training(cfg, spec)
    return Trained(summary=summary, run_dir=Path(cfg.out))


def _plain(name: str, value):
    """Python's natural forms of a setting as the field's own: a path (`out=Path(...)`) as text where the field
    is text, a numpy scalar (`lr=np.float32(1e-4)`, `seed=np.int64(3)`) as its Python number."""
    if isinstance(value, os.PathLike) and str in kinds(name):
        return os.fspath(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _check_type(name: str, value) -> None:
    """A keyword of `train` of its field's type (`beta_dqn.configuration.fields.fits`); a list (a grid's axis) never."""
    if isinstance(value, (list, tuple)):
        raise ConfigError(name, f"{value!r}: train() runs one run; a grid over a list of values runs from the shell "
                                "(python -m learner.main)")
    if not fits(name, value):
        words = {int: "a whole number", float: "a number", str: "text", bool: "True or False", type(None): "None"}
        raise ConfigError(name, f"{value!r}: give {' or '.join(words[a] for a in kinds(name))}")


CHECKPOINTS = ("last", "best")


def load(run_dir: str | Path, env: str | None = None, trust_run: bool = False, checkpoint: str = "last") -> Agent:
    """The agent of a run directory: `checkpoint="last"`, as its last checkpoint left it (a finished run's: its final
    networks; checkpoint.pt), or `"best"`, the networks of its best evaluation (the highest score, success rate or
    return, of its evaluations so far; the earliest of a tie; best.pt). `Agent.env_steps` says where either stands.

    A run folder is data, not code: where the run's environment is a user module's (`module:Id`), `load` imports
    that module, which runs its code, only when you name it (`env="module:Id"`, the run's own) or trust the run
    (`trust_run=True`); otherwise it refuses in one line. Environments of installed packages (CliffWalk, MinAtar,
    MiniGrid, registered Gymnasium ids) need neither. A run with `--wrappers` (callables and arguments its folder
    names) is loaded only with `trust_run=True`."""
    import torch  # (lazy: importing this module answers in a second)

    from beta_dqn.driver.state import BEST, BEST_STATE

    if checkpoint not in CHECKPOINTS:
        raise ValueError(f"checkpoint={checkpoint!r}: give 'last' (checkpoint.pt) or 'best' (best.pt)")
    run_dir = Path(run_dir)
    path = run_dir / ("checkpoint.pt" if checkpoint == "last" else BEST)
    if not path.is_file():
        raise ValueError(f"no checkpoint.pt in {str(run_dir)!r}: give a run's directory (a run writes one at its "
                         "end and every --checkpoint-every env steps)" if checkpoint == "last" else
                         f"no {BEST} in {str(run_dir)!r}: a run writes it at its first evaluation with a score (runs "
                         "made before best.pt existed have none); the last checkpoint, checkpoint.pt, has its "
                         "final networks")
    ckpt, saved = read_checkpoint(path, ValueError, "learner" if checkpoint == "last" else BEST_STATE)
    check_run_code(path, saved.get("env"), env, trust_run, saved.get("wrappers") or "")
    try:
        cfg = Config.of(**{k: v for k, v in read_as_it_ran(saved).items() if k in FIELDS})
        spec = env_spec(cfg.env, cfg.env_kwargs, cfg.wrappers, cfg.obs_layout, cfg.network, cfg.pixels)
    except (UnknownEnvError, ReadingError) as e:
        raise ConfigError("env", str(e)) from None
    from learner.learner import Learner, LearnerSettings

    learner = Learner.solo(settings(LearnerSettings, cfg), spec, torch.device("cpu"))
    try:
        if checkpoint == "last":
            learner.load_state_dict(ckpt["learner"])
            weights = learner.weights()
        else:  # the acting networks as evaluated, each parameter of the shape this method's network has
            weights = _fitted(ckpt[BEST_STATE]["networks"], unflatten(learner.weights()))
    except (RuntimeError, KeyError, ValueError, TypeError, IndexError, AttributeError) as e:  # shapes, names, ...
        reason = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
        raise ValueError(f"{path} does not fit {cfg.algo}'s networks on {spec.name} ({type(e).__name__}: "
                         f"{reason})") from None
    finally:
        learner.close()
    return Agent(cfg, spec, weights, int(ckpt["counters"]["env_steps"]), checkpoint)


def _fitted(saved: dict, expected: dict) -> dict:
    """best.pt's networks as numpy arrays, where they are exactly the networks `expected` names with their shapes;
    else ValueError naming the first difference."""
    if sorted(saved) != sorted(expected):
        raise ValueError(f"it holds the networks {sorted(saved)}, the method's are {sorted(expected)}")
    out = {}
    for name, params in expected.items():
        got = saved[name]
        if not isinstance(got, dict) or sorted(got) != sorted(params):
            raise ValueError(f"network {name} has other parameters than the method's")
        for key, value in params.items():
            if tuple(got[key].shape) != value.shape:
                raise ValueError(f"{name}.{key} has shape {tuple(got[key].shape)}, the network's is {value.shape}")
        out[name] = {key: got[key].numpy().astype(params[key].dtype) for key in params}
    return out


def check_run_code(path: Path, run_env, named: str | None, trust_run: bool, wrappers="") -> None:
    """ValueError (one line) where loading the checkpoint at `path` would run code that only the run names: its
    environment is `module:Id`, and the user neither named that environment (`named`) nor trusts the run; or it
    has `--wrappers` (callables, with arguments, that the run names), and the user does not trust the run."""
    if named is not None and named != run_env:
        raise ValueError(f"env {named!r}: {path} ran on {run_env!r}; name that environment, or leave env out")
    if not isinstance(run_env, str):
        raise ValueError(f"{path}: its config's env is {run_env!r}, not an environment's name")
    if ":" in run_env and named is None and not trust_run:
        module = run_env.partition(":")[0]
        raise ValueError(f"{path} ran on {run_env!r}, whose module {module!r} would be imported, running its code; "
                         "a run folder is not trusted to name code: name the environment yourself (--env "
                         f"{run_env} / env={run_env!r}) or trust the run (--trust-run / trust_run=True)")
    if wrappers and not trust_run:
        raise ValueError(f"{path} wraps its environment with --wrappers {wrappers}; applying them calls what they name "
                         "with the run's arguments, and a run folder is not trusted to name code: trust the run "
                         "(--trust-run / trust_run=True)")


class Agent:
    """A trained run's evaluation policy (`Acting.evaluate`: β-DQN's pure exploitation, Bootstrapped DQN's
    vote, greedy on Q for the others), on numpy copies of its networks, as the run's evaluator acts. `checkpoint`:
    which of the run's it was loaded from ("last" or "best"), `env_steps`: where that one stands."""

    def __init__(self, config: Config, spec: EnvSpec, weights: dict, env_steps: int, checkpoint: str = "last"):
        from beta_dqn.configuration.flags import method_settings

        self.config, self.spec, self.env_steps, self.checkpoint = config, spec, env_steps, checkpoint
        self._acting = acting(method_settings(config))
        self._nets = {name: NumpyNet(p, spec.reading) for name, p in unflatten(weights).items()}
        self._rng = np.random.default_rng(0)  # a vote's ties (Bootstrapped DQN), drawn as the evaluator draws

    def act(self, obs) -> int | np.ndarray:
        """The evaluation policy's action (greedy: no ε) for one observation (an int), or for a batch of them,
        shape (N, *observation shape) (an int64 array of N actions)."""
        batch, one = self._batch(obs)
        values = self._acting.outputs(self._nets, batch)
        actions = np.array([self._acting.evaluate("main", {k: v[i] for k, v in values.items()}, self._rng)
                            for i in range(len(batch))], dtype=np.int64)
        return int(actions[0]) if one else actions

    def q_values(self, obs) -> np.ndarray:
        """Q(s, ·) of the run's Q network, for one observation (shape (actions,)) or a batch ((N, actions));
        Bootstrapped DQN's every head ((heads, actions), (N, heads, actions))."""
        batch, one = self._batch(obs)
        q = self._acting.outputs(self._nets, batch)["q"]
        return q[0] if one else q

    def behaviour(self, obs) -> np.ndarray:
        """β-DQN's behaviour function β(· | s), the probability the replay's data took each action in s, for one
        observation (shape (actions,)) or a batch ((N, actions)); ValueError for a method that learns none."""
        if "beta" not in self._nets:
            raise ValueError(f"behaviour(): {self.config.algo} learns no behaviour function β (β-DQN does)")
        batch, one = self._batch(obs)
        beta = self._acting.outputs(self._nets, batch)["beta"]
        return beta[0] if one else beta

    def _batch(self, obs) -> tuple[np.ndarray, bool]:
        """`obs` as a batch, and whether it was one observation; ValueError (one line) for another shape, an
        empty batch, or a NaN or infinity."""
        obs = np.asarray(obs)
        shape = self.spec.obs_shape
        one = obs.shape == shape
        if not one and not (obs.shape[1:] == shape and len(obs) > 0):
            raise ValueError(f"an observation of shape {obs.shape}; {self.spec.name} gives {shape} (a batch of N ≥ 1 "
                             f"of them: (N, {', '.join(map(str, shape))}))")
        if np.issubdtype(obs.dtype, np.number) and not np.isfinite(obs).all():
            raise ValueError(f"an observation with nan or inf in it; {self.spec.name} gives finite ones")
        return (obs[None] if one else obs), one

    def evaluate(self, episodes: int = 10, seed: int = 0, video_dir: str | Path | None = None,
                 epsilon: float | None = None) -> dict:
        """`episodes` episodes of the evaluation policy with probability `epsilon` of a uniform action (default:
        the run's `--eval-epsilon`, as its own evaluations), from environment and rng seeds `seed`. With
        `video_dir` (a new or empty directory, never a link), each episode is recorded there (Gymnasium's
        `RecordVideo`: the env must render `rgb_array` frames, and moviepy be installed); where a video cannot be
        made or written (a full or read-only disk, no pygame), ValueError in one line, and the videos of this call
        are removed (no half-written file stays)."""
        if not isinstance(episodes, int) or isinstance(episodes, bool) or not 1 <= episodes <= 100_000:
            raise ValueError(f"episodes={episodes!r}: give a whole number from 1 to 100,000")
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**32:
            raise ValueError(f"seed={seed!r}: give a whole number from 0 to 2**32 - 1")
        epsilon = self.config.eval_epsilon if epsilon is None else epsilon
        if not isinstance(epsilon, (int, float)) or isinstance(epsilon, bool) or not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon={epsilon!r}: give a probability from 0 to 1")
        made = video_dir is not None and not os.path.lexists(video_dir)
        env = self._env(seed, video_dir)
        try:
            try:
                returns, successes = play(self._acting, self._nets, env, np.random.default_rng(seed), episodes,
                                          epsilon, self.spec.n_actions)
            finally:
                env.close()  # (RecordVideo writes an episode's video as it ends, the last one here)
        except (EnvFailed, KeyboardInterrupt):
            _remove_videos(env, video_dir, made)
            raise
        except Exception as e:  # noqa: BLE001 - the video's writer (moviepy, ffmpeg, pygame) or the disk
            if video_dir is None:
                raise
            _remove_videos(env, video_dir, made)
            cause = write_error(Path(video_dir), e) if isinstance(e, OSError) else f"{type(e).__name__}: {e}"
            raise ValueError(f"video_dir: the videos could not be made ({cause.splitlines()[0]}); none of this "
                             "call's is kept") from None
        return {"episodes": episodes, "return_mean": float(np.mean(returns)), "return_std": float(np.std(returns)),
                "success_rate": float(np.mean(successes)) if self.spec.has_success else None,
                "returns": returns, **({"video_dir": str(video_dir)} if video_dir is not None else {})}

    def _env(self, seed: int, video_dir):
        if video_dir is None:
            return make_env(self.spec.name, seed=seed, kwargs=self.spec.env_kwargs, wrappers=self.spec.wrappers)
        video_dir = Path(video_dir)
        if video_dir.is_symlink():
            raise ValueError(f"video_dir {str(video_dir)!r} is a symbolic link; give a directory of its own (a video "
                             "is never written through a link)")
        if video_dir.exists() and (not video_dir.is_dir() or any(video_dir.iterdir())):
            raise ValueError(f"video_dir {str(video_dir)!r} exists and is not an empty directory; give a new one "
                             "(nothing there is overwritten)")
        try:
            import moviepy  # noqa: F401  (RecordVideo's writer)
        except ImportError:
            raise ValueError("video_dir: recording needs moviepy, the project's video extra: pip install "
                             "'beta-dqn[video]' (pip install -e '.[video]' in a clone)") from None
        import gymnasium as gym

        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # frames to arrays only: no display, and no SDL line
        try:
            env = make_env(self.spec.name, seed=seed, kwargs=self.spec.env_kwargs, render_mode="rgb_array",
                           wrappers=self.spec.wrappers)
        except UnknownEnvError as e:
            raise ValueError(f"video_dir: {e}") from None
        try:
            video_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            env.close()
            raise ValueError(f"video_dir: {write_error(video_dir, e)}") from None
        with warnings.catch_warnings():  # (its "overwriting existing videos" of the empty directory made here)
            warnings.filterwarnings("ignore", message=".*Overwriting existing videos")
            return gym.wrappers.RecordVideo(env, str(video_dir), episode_trigger=lambda _: True, disable_logger=True)


def _remove_videos(env, video_dir, made: bool) -> None:
    """What one `evaluate` wrote into `video_dir` (new or empty when it began, never a link): its files, and the
    directory where the call made it; the recorder `env` forgets its frames (else its finalizer warns of an
    unsaved video)."""
    if video_dir is None:
        return
    env.recorded_frames, env.recording = [], False
    if not os.path.isdir(video_dir) or os.path.islink(video_dir):
        return
    if made:
        shutil.rmtree(video_dir, ignore_errors=True)
        return
    for entry in Path(video_dir).iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
