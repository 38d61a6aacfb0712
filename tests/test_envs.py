"""The environment factory against spec §6."""

import numpy as np
import pytest

from actors.envs import UnknownEnvError, env_spec, make_env
from beta_dqn.configuration.defaults import env_defaults


def test_cliffwalk_shapes_rewards_and_limits():
    env = make_env("CliffWalk", seed=0)
    obs, _ = env.reset()
    assert obs.shape == (48,) and obs.dtype == np.uint8 and obs.sum() == 1
    assert obs[3 * 12 + 0] == 1  # start: bottom-left
    assert env.action_space.n == 4
    # right from the start falls into the cliff: −1, terminated, no success
    _, r, term, trunc, info = env.step(1)
    assert (r, term, trunc, info["success"]) == (-1.0, True, False, False)
    # up, 11 × right, down reaches the goal: +1, terminated, success
    env.reset()
    for a in [0] + [1] * 11:
        _, r, term, _, _ = env.step(a)
        assert r == 0.0 and not term
    _, r, term, _, info = env.step(2)
    assert (r, term, info["success"]) == (1.0, True, True)
    # 100 steps without ending: truncated, not terminated
    env.reset()
    for _ in range(100):
        _, r, term, trunc, _ = env.step(0)  # bumping into the top wall
    assert (term, trunc) == (False, True)
    spec = env_spec("CliffWalk")
    assert env_defaults("CliffWalk") == (0.9, 3e-4) and spec.n_actions == 4 and spec.has_success


def test_minatar_breakout():
    spec = env_spec("MinAtar/Breakout")
    assert spec.obs_shape == (10, 10, 4) and spec.obs_dtype == "bool" and spec.n_actions == 6
    assert env_defaults("MinAtar/Breakout") == (0.99, 3e-4) and not spec.has_success
    assert env_spec("MinAtar/Breakout-v0").name == "MinAtar/Breakout"
    assert env_defaults("MinAtar/Asterix") == env_defaults("MinAtar/Asterix-v0") == (0.99, 3e-5)
    env = make_env("MinAtar/Breakout", seed=1)
    obs, _ = env.reset()
    assert obs.shape == (10, 10, 4) and obs.dtype == bool
    assert env.unwrapped.game.sticky_action_prob == 0.1


def test_minatar_is_seeded():
    def trajectory(seed):
        env = make_env("MinAtar/SpaceInvaders", seed=seed)
        obs, _ = env.reset()
        out = [obs.copy()]
        for t in range(30):
            obs, *_ = env.step(t % 6)
            out.append(obs.copy())
        return np.stack(out)

    assert np.array_equal(trajectory(3), trajectory(3))


def _lava_crossing_env():
    """LavaCrossing with the agent placed facing a lava cell."""
    env = make_env("LavaCrossing-Easy", seed=0)
    env.reset()
    grid = env.unwrapped.grid
    for x in range(1, grid.width - 1):
        for y in range(1, grid.height - 1):
            cell = grid.get(x, y)
            if cell is not None and cell.type == "lava":
                for d, (dx, dy) in enumerate([(1, 0), (0, 1), (-1, 0), (0, -1)]):
                    px, py = x - dx, y - dy
                    if grid.get(px, py) is None:
                        env.unwrapped.agent_pos = (px, py)
                        env.unwrapped.agent_dir = d
                        return env
    raise AssertionError("no lava cell reachable in this layout")


def test_minigrid_paper_rewards_and_action_sets():
    spec = env_spec("LavaCrossing-Easy")
    assert spec.obs_shape == (9, 9, 3) and spec.n_actions == 3 and spec.has_success
    assert env_spec("DoorKey").n_actions == 5 and env_spec("DoorKey").obs_shape == (6, 6, 3)
    assert env_spec("Unlock").n_actions == 5
    assert env_defaults("SimpleCrossing-Easy") == (0.99, 1e-4)
    env = _lava_crossing_env()
    max_steps = env.unwrapped.max_steps
    assert max_steps == 4 * 9 * 9
    # turning is an ordinary step: −0.01
    _, r, term, _, _ = env.step(0)
    assert r == pytest.approx(-0.01) and not term
    env.step(1)  # turn back to face the lava
    _, r, term, _, info = env.step(2)  # forward into lava: −MaxSteps/100, ends, no success
    assert r == pytest.approx(-max_steps / 100) and term and info["success"] is False


def test_minigrid_success_reward():
    env = make_env("DoorKey", seed=0)
    env.reset()
    u = env.unwrapped
    gx, gy = next((x, y) for x in range(u.width) for y in range(u.height)
                  if u.grid.get(x, y) is not None and u.grid.get(x, y).type == "goal")
    u.agent_pos, u.agent_dir = (gx - 1, gy), 0  # just left of the goal, facing right
    _, r, term, _, info = env.step(2)
    assert r == pytest.approx(10 * 6 * 6 / 100) and term and info["success"] is True


def test_any_registered_gymnasium_id_and_unknown_names():
    spec = env_spec("CartPole-v1")
    assert spec.obs_shape == (4,) and spec.n_actions == 2
    with pytest.raises(UnknownEnvError, match="known: CliffWalk, MinAtar/Asterix"):
        env_spec("Pong")
    with pytest.raises(UnknownEnvError):
        env_spec("MinAtar/Pong")
    with pytest.raises(UnknownEnvError, match="only Discrete"):
        env_spec("Pendulum-v1")


@pytest.mark.parametrize("name", ["CliffWalk", "MinAtar/Breakout", "MinAtar/SpaceInvaders", "DoorKey",
                                  "LavaCrossing-Hard", "CartPole-v1"])
def test_every_env_passes_gymnasiums_own_checker(name):
    """check_env: reset(seed) reaches the generator it inspects, same seed same episode, and the env can be built
    again from its spec (a MiniGrid wrapper that records its arguments)."""
    from gymnasium.utils.env_checker import check_env

    check_env(make_env(name, seed=0), skip_render_check=True)


def _steps(env, seed, n=300):
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    out = [(obs.copy(),)]
    for _ in range(n):
        obs, r, term, trunc, info = env.step(int(rng.integers(env.action_space.n)))
        out.append((obs.copy(), float(r), bool(term), bool(trunc)))
        if term or trunc:
            obs, _ = env.reset()
            out.append((obs.copy(),))
    return out


def _same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x[0], y[0]) and x[1:] == y[1:]


@pytest.mark.parametrize("game", ["breakout", "space_invaders", "asterix"])
def test_minatar_gives_the_episodes_minatars_own_gym_env_gives(game):
    """Our env seeds the game as minatar.gym.BaseEnv does: the same observations, rewards and ends, step by step."""
    from minatar.gym import BaseEnv

    from actors.envs.minatar import GAMES as MINATAR_GAMES

    name = "MinAtar/" + next(g for g in MINATAR_GAMES if g.lower() == game.replace("_", ""))
    _same(_steps(make_env(name), 7), _steps(BaseEnv(game=game, use_minimal_action_set=False), 7))


@pytest.mark.parametrize("task", ["DoorKey", "LavaCrossing-Easy", "SimpleCrossing-Hard"])
def test_minigrid_observes_as_minigrids_full_observation_wrappers_do(task):
    """The full grid as minigrid's FullyObsWrapper + ImgObsWrapper give it, the paper's rewards on top."""
    import gymnasium as gym
    from minigrid.wrappers import FullyObsWrapper, ImgObsWrapper

    from actors.envs.minigrid import TASKS as MINIGRID_TASKS

    gid, actions = MINIGRID_TASKS[task]
    ours = make_env(task)
    theirs = ImgObsWrapper(FullyObsWrapper(gym.make(gid, disable_env_checker=True)))
    scale = theirs.unwrapped.max_steps / 100
    rng, expected = np.random.default_rng(3), []
    obs, _ = theirs.reset(seed=3)
    expected.append((obs.copy(),))
    for _ in range(300):
        obs, r, term, trunc, _ = theirs.step(actions[int(rng.integers(len(actions)))])
        r = (scale if r > 0 else -scale) if term else -0.01
        expected.append((obs.copy(), float(r), bool(term), bool(trunc)))
        if term or trunc:
            obs, _ = theirs.reset()
            expected.append((obs.copy(),))
    _same(_steps(ours, 3), expected)


def test_an_evaluation_episode_that_never_ends_is_cut_and_said_once():
    """An environment registered without max_episode_steps whose episodes never end: evaluation cuts each
    episode at its step cap (its return so far counts, no success) and warns once, instead of hanging."""
    import gymnasium as gym

    from actors import evaluator

    class Endless(gym.Env):
        observation_space = gym.spaces.Box(0, 1, shape=(2,), dtype=np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            return np.zeros(2, dtype=np.float32), {}

        def step(self, action):
            return np.zeros(2, dtype=np.float32), 1.0, False, False, {"success": True}

    class Greedy:
        def outputs(self, nets, obs):
            return {"q": np.zeros((1, 2))}

        def evaluate(self, policy, values, rng):
            return 0

    evaluator._cut.clear()
    with pytest.warns(evaluator.EpisodeCut, match="reached 50 steps without ending") as said:
        returns, successes = evaluator.play(Greedy(), {}, Endless(), np.random.default_rng(0), 3, 0.5, 2,
                                            max_steps=50)
    assert returns == [50.0, 50.0, 50.0] and successes == [False, False, False]
    assert len([w for w in said if w.category is evaluator.EpisodeCut]) == 1
    assert evaluator.EVAL_MAX_STEPS == 27_000  # the default cap the docs state
