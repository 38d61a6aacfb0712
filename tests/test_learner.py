"""The learner's update: β on its own thread is the same computation as the one-thread update."""

import dataclasses
import sys

import numpy as np
import pytest
import torch

from beta_dqn.configuration.flags import Config, resolve, settings
from learner.learner import Eager, GradientStep, Graphed, Learner, LearnerSettings, OverlappedStep
from learner.packed import PackedLearner


def solo(cfg, spec, device=None) -> Learner:
    """A seed's learner alone, from a run's configuration."""
    return Learner.solo(settings(LearnerSettings, cfg), spec, device)


def packed(cfgs, spec, device=None, **kw) -> PackedLearner:
    """The seeds of `cfgs` as one pack."""
    return PackedLearner([settings(LearnerSettings, c) for c in cfgs], spec, device, **kw)


def with_behaviour_part(algo, behaviour_part):
    """The method `algo` with its β forward pass (`behaviour_part`) replaced."""
    return type("WithBehaviourPart", (), {"__getattr__": lambda self, name: getattr(algo, name),
                                          "behaviour_part": staticmethod(behaviour_part)})()


def interrupted_at(call, k: int, watched: set[str], seen: dict) -> str:
    """`call()` with a KeyboardInterrupt raised at its k-th traced event (a line, call, return or exception event
    of code in the files `watched`, where a Ctrl-C can land): "interrupted", "finished" (it had fewer events),
    or "error" (what the interrupt must never become: recorded in seen["errors"] with the point, None where the
    error came before it); seen["point"] and seen["points"] name where it was raised (file, line, event)."""
    events = [0]
    seen["point"] = None

    def local(frame, event, arg):
        events[0] += 1
        if events[0] == k:
            seen["point"] = (frame.f_code.co_filename.rsplit("/", 1)[-1], frame.f_lineno, event)
            seen["points"].add(seen["point"])
            raise KeyboardInterrupt  # (a trace function's error propagates there, and ends the tracing)
        return local

    sys.settrace(lambda frame, event, arg: local(frame, event, arg) if frame.f_code.co_filename in watched
                 else None)
    try:
        call()
        return "finished"
    except KeyboardInterrupt:
        return "interrupted"
    except Exception as e:  # noqa: BLE001 - what the interrupt must never become
        seen["errors"].append((seen["point"], repr(e)[:200]))
        return "error"
    finally:
        sys.settrace(None)


def batches(learner, n, seed=0):
    rng = np.random.default_rng(seed)
    shape = learner.spec.obs_shape
    for _ in range(n):
        yield {"obs": learner.packer.pack(rng.random((32, *shape)) < 0.2),
               "next_obs": learner.packer.pack(rng.random((32, *shape)) < 0.2),
               "action": rng.integers(0, learner.spec.n_actions, 32),
               "reward": rng.standard_normal(32).astype(np.float32),
               "terminated": rng.random(32) < 0.1, "option": rng.integers(0, 4, 32)}


@pytest.mark.parametrize("two_q", [False, True])
def test_beta_thread_gives_exactly_the_one_thread_update(two_q):
    cfg, spec = resolve(Config.of(env="MinAtar/Breakout", algo="beta_dqn", two_q=two_q, wandb="disabled"))
    learners = [solo(cfg.replaced(beta_thread=flag), spec) for flag in (False, True)]
    assert [type(learner.path.step) for learner in learners] == [GradientStep, OverlappedStep]
    metrics = [[], []]
    for k, learner in enumerate(learners):
        for i, batch in enumerate(batches(learner, 6)):
            metrics[k].append({n: float(v) for n, v in learner.update(batch).items()})
            if i == 2:
                learner.sync_target()
        learner.close()
    assert metrics[0] == metrics[1]
    for name in learners[0].nets:
        for (pn, a), (_, b) in zip(learners[0].nets[name].named_parameters(),
                                   learners[1].nets[name].named_parameters(), strict=True):
            assert torch.equal(a, b), f"{name}.{pn} differs"
    # and it did learn something: parameters moved from their initial values
    fresh = solo(cfg, spec)
    assert not torch.equal(fresh.nets["beta"].out.weight, learners[1].nets["beta"].out.weight)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("algo", ["beta_dqn", "beta_dqn+two_q", "dqn", "bootstrapped_dqn", "rnd", "lesson"])
def test_cuda_graph_update_equals_the_eager_update(algo):
    algo, _, two_q = algo.partition("+")
    cfg, spec = resolve(Config.of(env="MinAtar/Breakout", algo=algo, two_q=bool(two_q), wandb="disabled",
                               device="cuda"))
    device = torch.device("cuda")
    learners = [solo(dataclasses.replace(cfg, cuda_graphs=flag), spec, device) for flag in (False, True)]
    assert [type(learner.path) for learner in learners] == [Eager, Graphed]
    metrics = [[], []]
    for k, learner in enumerate(learners):
        for i, batch in enumerate(batches(learner, 8)):  # warm-up, capture, then replays
            metrics[k].append({n: float(v) for n, v in learner.update(batch).items()})
            if i == 5:
                learner.sync_target()  # the graph reads the target's parameters in place
        learner.close()
    assert learners[1].path.graph is not None
    for a, b in zip(metrics[0], metrics[1], strict=True):
        assert a.keys() == b.keys()
        for n in a:
            assert a[n] == pytest.approx(b[n], rel=1e-4, abs=1e-5), n
    for name in learners[0].nets:
        for (pn, a), (_, b) in zip(learners[0].nets[name].named_parameters(),
                                   learners[1].nets[name].named_parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5, msg=f"{name}.{pn}")
    # RND's and LESSON's running statistics are updated inside the graph as they are eagerly
    for (bn, a), (_, b) in zip(learners[0].frozen.named_buffers(), learners[1].frozen.named_buffers(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-8, msg=bn)


def test_an_interrupt_at_any_line_of_an_update_leaves_nothing_wedged(monkeypatch):
    """Ctrl-C lands wherever the thread is, between any two lines of Python, often while it waits for β's thread.
    Interrupted at each line (and each call and return) of the update's own code and of the waiting it does (the
    standard library's threading, queue and concurrent.futures), one update per point, and at each of the first
    points of a long wait for β (rounds of it, each asking whether β's thread has ended): each leaves as
    KeyboardInterrupt, never an error of its own, the next update never hangs, and the learner closes at once.
    (On `concurrent.futures`, an interrupt as `Future.result`'s `with` had taken the Future's lock left it held:
    β's thread hung handing its result over and every later update with it; one inside `Condition.wait` after
    its lock's release made a RuntimeError of the interrupt, which a stop's CI saw.)"""
    import concurrent.futures._base
    import inspect
    import queue
    import threading
    import time

    import learner.learner as module

    cfg, spec = resolve(Config.of(env="CliffWalk", algo="beta_dqn", beta_thread=True, wandb="disabled"))
    learner = solo(cfg, spec)
    step = learner.path.step
    assert type(step) is OverlappedStep
    algo = step.algo

    def slow(*args):  # β's forward pass outlasts Q's, so that the update always waits for it
        time.sleep(0.005)
        return algo.behaviour_part(*args)

    step.algo = with_behaviour_part(algo, slow)
    batch = next(batches(learner, 1))
    watched = {module.__file__, threading.__file__, queue.__file__, concurrent.futures._base.__file__}
    seen = {"point": None, "interrupted": 0, "points": set(), "errors": [], "finished": False}

    def update_interrupted_at(k: int) -> bool:
        """One update, a KeyboardInterrupt raised at its k-th traced event: whether it did not finish."""
        outcome = interrupted_at(lambda: learner.update(batch), k, watched, seen)
        torch.set_grad_enabled(True)  # (one inside torch's `no_grad()` leaves it off; a run ends anyway)
        return outcome != "finished"

    def sweep():
        k = 1
        while update_interrupted_at(k):
            seen["interrupted"] += 1
            k += 1
        gate = threading.Semaphore(0)
        step.algo = with_behaviour_part(algo, lambda *args: (gate.acquire(), algo.behaviour_part(*args))[1])
        monkeypatch.setattr(module, "WAIT_ROUND_S", 0.01)
        seen["points"].clear()
        seen["waiting"] = sum(update_interrupted_at(k) for k in range(1, 81))  # β held back: none can finish
        step.algo = algo
        for _ in range(80):
            gate.release()  # (the held-back jobs end; their words are left behind by step number)
        learner.update(batch)
        seen["finished"] = True

    thread = threading.Thread(target=sweep, daemon=True)  # (a hang ends the test, not the suite)
    thread.start()
    thread.join(timeout=60)
    assert seen["finished"], f"an update hung after an interrupt at {seen['point']}"
    assert not seen["errors"], seen["errors"][:3]
    assert seen["interrupted"] > 20 and seen["waiting"] == 80, seen  # (its own lines and its waits were reached)
    source, first = inspect.getsourcelines(OverlappedStep._next)  # the look at whether β's thread has ended
    line = first + next(i for i, text in enumerate(source) if "if self.ended.is_set()" in text)
    assert ("learner.py", line, "line") in seen["points"], sorted(seen["points"])
    start = time.monotonic()
    learner.close()
    assert not step.thread.is_alive() and time.monotonic() - start < 2.0


def test_the_beta_thread_ends_with_its_learner_closed_or_not():
    """β's thread ends as its learner closes, and with a learner never closed (a run that failed as it started)
    once nothing holds it: the thread holds no network; an update after the close is an error, not a hang."""
    import gc
    import time
    import weakref

    cfg, spec = resolve(Config.of(env="CliffWalk", algo="beta_dqn", beta_thread=True, wandb="disabled"))
    learner = solo(cfg, spec)
    batch = next(batches(learner, 1))
    learner.update(batch)
    thread, nets = learner.path.step.thread, weakref.ref(learner.nets["beta"])
    del learner
    gc.collect()
    thread.join(timeout=10)
    assert not thread.is_alive() and nets() is None
    learner = solo(cfg, spec)
    learner.update(batch)
    learner.close()
    assert not learner.path.step.thread.is_alive()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="closed"):
        learner.update(batch)
    assert time.monotonic() - start < 1.0


def test_an_error_in_betas_step_is_the_updates_and_a_beta_thread_gone_is_not_waited_on():
    """An error in β's forward pass or step leaves the update as that error, and the next update goes on as
    usual; a β thread that ended (it never should before its close) is an error within a second or so, not a
    wait forever."""
    import threading
    import time

    cfg, spec = resolve(Config.of(env="CliffWalk", algo="beta_dqn", beta_thread=True, wandb="disabled"))
    learner = solo(cfg, spec)
    step, batch = learner.path.step, next(batches(learner, 1))
    algo = step.algo

    def failing(*args):
        raise ValueError("β's forward pass failed")

    step.algo = with_behaviour_part(algo, failing)
    with pytest.raises(ValueError, match="β's forward pass failed"):
        learner.update(batch)
    step.algo = algo
    assert float(learner.update(batch)["loss"]) > 0
    step.todo.put(None)  # (β's thread ends as on a close, the learner not told)
    step.thread.join(timeout=10)
    raised = []

    def update():
        try:
            learner.update(batch)
        except RuntimeError as e:
            raised.append(str(e))

    waiter = threading.Thread(target=update, daemon=True)  # (a wait forever ends the test, not the suite)
    start = time.monotonic()
    waiter.start()
    waiter.join(timeout=10)
    assert raised == ["β's update thread has ended"] and time.monotonic() - start < 5.0
    learner.close()


def test_an_error_from_betas_thread_is_freed_as_soon_as_it_is_dropped():
    """β's thread keeps nothing of a job once it is done, and the error it hands over makes no reference cycle
    through the learner's frames: dropped, it is freed at once (no wait for the garbage collector)."""
    import gc
    import time
    import weakref

    cfg, spec = resolve(Config.of(env="CliffWalk", algo="beta_dqn", beta_thread=True, wandb="disabled"))
    learner = solo(cfg, spec)
    step, batch = learner.path.step, next(batches(learner, 1))
    algo, made = step.algo, []

    class Boom(ValueError):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(weakref.ref(self))

    def failing(*args):
        raise Boom("β failed")

    step.algo = with_behaviour_part(algo, failing)
    gc.collect()
    gc.disable()
    try:
        try:
            learner.update(batch)
        except Boom:
            pass
        time.sleep(0.2)  # (β's thread past its job)
        freed = made[0]() is None
    finally:
        gc.enable()
        step.algo = algo
        learner.close()
    assert freed


@pytest.mark.parametrize("where", ["start", "logs"])
def test_a_run_that_cannot_start_or_open_its_logs_ends_betas_thread(where, tmp_path, monkeypatch):
    """A run that fails as it starts (its replay cannot be made) or as it opens its logs closes the learner it
    made: β's thread ends then, not whenever the learner is collected."""
    import beta_dqn.driver.run
    from beta_dqn.driver.run import Run

    made, solo_of = [], Learner.solo.__func__

    def recording(cls, *args, **kw):
        made.append(solo_of(cls, *args, **kw))
        return made[-1]

    def failing(*args, **kw):
        raise OSError(f"cannot {where}")

    monkeypatch.setattr(Learner, "solo", classmethod(recording))
    monkeypatch.setattr(beta_dqn.driver.run, "make_replay" if where == "start" else "RunLogger", failing)
    cfg, spec = resolve(Config.of(runtime="serial", actors=1, envs_per_actor=2, total_steps=3000, learning_starts=500,
                               env="CliffWalk", algo="beta_dqn", beta_thread=True, wandb="disabled", progress=False,
                               out=str(tmp_path / "run")))
    with pytest.raises(OSError, match=f"cannot {where}"):
        Run(cfg, spec).run()
    assert len(made) == 1
    made[0].path.step.thread.join(timeout=10)
    assert not made[0].path.step.thread.is_alive()


def test_a_ctrl_c_while_the_learner_closes_still_shuts_the_runs_parts_down(tmp_path, monkeypatch):
    """A run ends (here: it finished; after a first Ctrl-C, the same close) and closes its learner; a Ctrl-C
    landing in that close still leaves the run's parts (actors, replay) shut down, and goes on as the
    interrupt."""
    from beta_dqn.driver.run import Run

    shut, close = [], Learner.close

    def interrupted(self):
        close(self)
        raise KeyboardInterrupt

    shutdown = Run._shutdown
    monkeypatch.setattr(Learner, "close", interrupted)
    monkeypatch.setattr(Run, "_shutdown", lambda self: (shut.append(True), shutdown(self)))
    cfg, spec = resolve(Config.of(runtime="serial", actors=1, envs_per_actor=2, total_steps=1000, learning_starts=500,
                               eval_every=1000, eval_episodes=1, env="CliffWalk", algo="beta_dqn", beta_thread=True,
                               wandb="disabled", progress=False, out=str(tmp_path / "run")))
    with pytest.raises(KeyboardInterrupt):
        Run(cfg, spec).run()
    assert shut == [True]
