"""A method is a learning module, an acting class and one registry line (`learner.methods.METHODS`)."""

import numpy as np
import pytest

from beta_dqn.configuration.flags import ALGOS, Config, method_settings, public
from learner.methods import METHODS, acting, algorithm
from learner.methods.contracts import Acting, Algorithm


def _members(protocol) -> set[str]:
    names = {n for n in vars(protocol) if not n.startswith("_")}
    return names | set(getattr(protocol, "__annotations__", {}))


def test_the_registry_is_the_list_of_methods_the_command_line_offers():
    assert ALGOS == tuple(METHODS)


@pytest.mark.parametrize("name", list(METHODS))
def test_every_method_fills_both_contracts(name):
    module = algorithm(name)
    assert all(callable(getattr(module, member)) for member in _members(Algorithm)), name
    cfg = Config.of(algo=name)
    method = acting(method_settings(cfg))  # what it reads: its own flags and the ones that name it, no more
    missing = [m for m in _members(Acting) if not hasattr(method, m)]
    assert not missing, f"{name}'s acting lacks {missing}"
    assert method.eval_policies[0] == "main"
    # what its logs and reports show: a label for every evaluation policy, a labelled group for every arm
    assert set(method.eval_policies) <= set(method.eval_labels)
    assert method.arm_groups is None or set(method.arm_groups) <= set(method.group_labels)
    assert [group for _, group in type(method).arms_of(public(cfg))] == list(method.arm_groups or [])


@pytest.mark.parametrize("name", list(METHODS))
def test_acting_is_seeded_and_keeps_its_state_in_the_episode(name):
    """The same rng and outputs give the same actions, episode state included, for every method."""
    from actors.actor import Episode

    method = acting(method_settings(Config.of(algo=name, eps_start=0.5, eps_end=0.5)))
    cls, args = method.arm_source(0)
    source = cls(*args)
    rng = np.random.default_rng(0)
    values = {"q": rng.normal(size=4), "beta": np.array([0.7, 0.2, 0.06, 0.04]), "q_int": rng.normal(size=4),
              "option_q": rng.normal(size=4), "termination": np.full(4, 0.5)}
    arm, runs = source.select(), []
    for _ in range(2):
        ep, act_rng, actions = Episode(arm=arm), np.random.default_rng(1), []
        for step in range(20):
            ep.arm_steps += 1
            actions.append(method.act(ep, np.array([step % 3]), values, step, act_rng))
        runs.append((actions, method.bonus(ep), method.step_extras(ep)))
    assert runs[0] == runs[1]
    assert all(0 <= a < 4 for a in runs[0][0])
    assert len(runs[0][2]) == len(method.extras)  # a value for each per-step field it declares


def test_a_registry_line_whose_epsilon_cannot_run_is_refused_with_what_is_wrong():
    """ε-greedy acting without the ε schedule, or a gate that is not a boolean flag of the method's own, would
    fail mid-run (or drop the --eps-* flags silently): `register` refuses them, naming why."""
    from learner.methods import Method, check, register
    from learner.methods.beta_dqn.acting import BetaDQN
    from learner.methods.beta_dqn.flags import Flags as BetaFlags
    from learner.methods.dqn.acting import EpsilonGreedy

    with pytest.raises(ValueError, match=r"method 'plain': its acting is ε-greedy .* not say epsilon=True"):
        register("plain", Method("learner.methods.dqn", EpsilonGreedy, "Plain"))
    assert "plain" not in METHODS
    with pytest.raises(ValueError, match=r"epsilon='nope' is not a boolean flag of its own \(its flags: "
                                         r"arm_exchange, beta_thread, beta_eps, "):
        check("gated", Method("learner.methods.beta_dqn", BetaDQN, "Gated", BetaFlags, epsilon="nope"))
    with pytest.raises(ValueError, match=r"epsilon='policy_set' is not a boolean flag"):  # a flag, not a boolean
        check("gated", Method("learner.methods.beta_dqn", BetaDQN, "Gated", BetaFlags, epsilon="policy_set"))
    with pytest.raises(ValueError, match=r"epsilon='on' is not a boolean flag of its own \(its flags: none\)"):
        check("gated", Method("learner.methods.dqn", EpsilonGreedy, "Gated", epsilon="on"))
    check("dqn_again", METHODS["dqn"])  # the built-in lines pass (they are checked when the registry loads)


def test_a_method_whose_flags_are_not_frozen_is_refused_and_method_flags_hash_as_they_compare():
    """A Config is frozen and hashable whole: a method's flags class must be a frozen dataclass (else a run's flags
    could change under it, unchecked), and two equal sets of methods' flags hash alike in any order."""
    from dataclasses import dataclass

    from beta_dqn.configuration.fields import OwnFlags
    from learner.methods import Method, check
    from learner.methods.dqn.acting import EpsilonGreedy

    @dataclass
    class Loose:
        width: int = 3

        def check(self) -> None:
            pass

    with pytest.raises(ValueError, match="its flags class Loose is not a frozen dataclass"):
        check("loose", Method("learner.methods.dqn", EpsilonGreedy, "Loose", Loose, epsilon=True))
    flags = Config.of(beta_eps=0.1).methods
    backwards = OwnFlags(dict(reversed(list(flags.items()))))
    assert backwards == flags and hash(backwards) == hash(flags)


def test_a_methods_flags_are_read_typed_by_their_class_and_flat_by_name():
    """`config.flags(Flags)` is the method's own flags object (what a type checker follows), the same values
    `value(name)` reads and `replaced` changes; a class no registered method declares is a KeyError naming it."""
    from learner.methods.beta_dqn.flags import Flags as BetaFlags
    from learner.methods.rnd.flags import Flags as RndFlags

    cfg = Config.of(algo="dqn", beta_eps=0.2, rnd_scale=3.0)
    assert isinstance(cfg.flags(BetaFlags), BetaFlags) and cfg.flags(BetaFlags).beta_eps == cfg.value("beta_eps") == 0.2
    assert cfg.flags(RndFlags).rnd_scale == 3.0
    assert cfg.replaced(beta_eps=0.3).flags(BetaFlags).beta_eps == 0.3 and cfg.value("beta_eps") == 0.2

    class Stray:
        pass

    with pytest.raises(KeyError, match="Stray"):
        cfg.flags(Stray)
    with pytest.raises(TypeError, match="Config has no flag beta_epz"):
        Config.of(beta_epz=0.1)
