"""The learner's computation: one update on a batch, the target copy, weights, state.

The process that hosts it (`beta_dqn.driver.run`) decides when to update; this module only computes. A `Learner` is
one seed as its run sees it, composed of two parts chosen once when it is made:

- where its optimizer state lives: its own Adams (`Adams`), or its slice of a pack's (`learner.packed`);
- its update path (`UpdatePath`): the gradient step on the batch's tensors (`GradientStep`, or β-DQN's with β
  on a thread of its own, `OverlappedStep`), run eagerly (`Eager`) or replayed as a CUDA graph (`Graphed`);
  none for a seed of a pack, which its pack updates.
"""

from __future__ import annotations

import copy
import queue
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from torch import nn

from learner.methods import algorithm, extras
from learner.methods.contracts import MethodSettings
from learner.methods.networks import flat_weights
from learner.methods.reading import ReadingMismatch
from replay_service.buffer import make_packer
from replay_service.schema import Schema

_TORCH_TYPES = {int: torch.int64, float: torch.float32, bool: torch.bool}  # an extra's batch tensor by kind

GRAPH_WARMUP = 3  # eager updates before the CUDA graph is captured
CLOSE_WAIT_S = 5.0  # how long a closing learner waits for β's thread to end its step in hand
WAIT_ROUND_S = 1.0  # how often an update waiting on β's thread looks whether that thread has ended

Tensors = dict[str, torch.Tensor]


@dataclass(frozen=True)
class LearnerSettings:
    """What a learner reads of the run's configuration (`beta_dqn.configuration.settings.settings(LearnerSettings,
    cfg)`)."""

    seed: int
    lr: float
    gamma: float
    cuda_graphs: bool  # on a GPU, the update as one CUDA graph
    beta_thread: bool  # on a CPU, β-DQN's β on a thread of its own
    method: MethodSettings  # what the method's learning reads


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda: no CUDA device is available here; use --device auto or cpu")
    return torch.device(name)


def make_modules(algo, spec, settings: LearnerSettings) -> tuple[nn.ModuleDict, nn.ModuleDict]:
    """A seed's modules, on the CPU, from its seed: the trained networks, and what the loss reads but no
    optimizer steps (`frozen`): target copies (under their network's name) and an algorithm's fixed
    modules (RND's random target network, running statistics)."""
    torch.manual_seed(settings.seed)
    method = settings.method
    nets = nn.ModuleDict(algo.networks(spec, method))
    for name in algo.acting_networks(method):  # the actors read them as `spec.reading` says
        read = getattr(nets[name], "reading", None)
        if read is not None and (read.network, read.layout, read.pixels) != (
                spec.reading.network, spec.reading.layout, spec.reading.pixels):
            raise ReadingMismatch(f"{method.algo}'s network {name!r} reads observations as {read.network} "
                             f"{read.layout or 'flat'}{' pixels' if read.pixels else ''}, but the actors read this "
                             f"environment's as {spec.reading.network} {spec.reading.layout or 'flat'}"
                             f"{' pixels' if spec.reading.pixels else ''}: build it with "
                             "learner.methods.networks.network_for(spec, ...)")
    fixed: dict[str, nn.Module] = getattr(algo, "fixed", lambda spec, cfg: {})(spec, method)
    frozen = nn.ModuleDict({**{n: copy.deepcopy(nets[n]) for n in algo.targets(method)}, **fixed})
    return nets, frozen.requires_grad_(False)


def adam(params, lr: float, graphed: bool) -> torch.optim.Adam:
    """Fused (one kernel for all its parameters); capturable by a CUDA graph where the update is one."""
    return torch.optim.Adam(params, lr=lr, fused=True, capturable=graphed)


def step(loss: torch.Tensor, optimizers) -> None:
    """One backward of `loss` and a step of each optimizer."""
    for opt in optimizers:
        opt.zero_grad(set_to_none=True)
    loss.backward()
    for opt in optimizers:
        opt.step()


class OptimizerState(Protocol):
    """Where a seed's optimizer state lives: saved and loaded in the solo learner's format."""

    def state_dict(self) -> dict: ...

    def load_state_dict(self, states: dict) -> None: ...


class Adams:
    """A solo seed's optimizers, one Adam per network: stepping them all after one backward of the summed loss
    is the same as one Adam over every parameter."""

    def __init__(self, nets: nn.ModuleDict, lr: float, graphed: bool):
        self.graphed = graphed
        self.by_network = {name: adam(net.parameters(), lr, graphed) for name, net in nets.items()}

    def state_dict(self) -> dict:
        return {name: opt.state_dict() for name, opt in self.by_network.items()}

    def load_state_dict(self, states: dict) -> None:
        for name, opt in self.by_network.items():
            opt.load_state_dict(states[name])
            for group in opt.param_groups:  # the saved flag is the saving process's (CPU or GPU)
                group["capturable"] = self.graphed


class Batches:
    """A replay batch (numpy, as the sampler gives it) as the update's tensors: the core fields and the
    method's extras (`replay_service.schema`)."""

    def __init__(self, spec, algo: str, device: torch.device):
        self.packer = make_packer(spec)
        self.extras = Schema(extras(algo)).extras
        self.device = device

    def host(self, batch: dict[str, np.ndarray]) -> Tensors:
        # float32 once here, not in every forward pass (3 per β-DQN update); torch.tensor copies the
        # rest: arrays that come through Ray's object store are read-only
        out = {k: torch.from_numpy(self.packer.unpack(batch[k]).astype(np.float32)) for k in ("obs", "next_obs")}
        out["action"] = torch.tensor(batch["action"], dtype=torch.int64)
        out["reward"] = torch.tensor(batch["reward"], dtype=torch.float32)
        out["terminated"] = torch.tensor(batch["terminated"], dtype=torch.bool)
        for f in self.extras:  # (integers as int64: what indexing wants)
            out[f.name] = torch.tensor(batch[f.name], dtype=_TORCH_TYPES[f.kind])
        return out

    def on_device(self, batch) -> Tensors:
        return {k: v.to(self.device, non_blocking=True) for k, v in self.host(batch).items()}


class UpdatePath(Protocol):
    """How a batch becomes a gradient step: returns detached metric tensors (no device sync; with a CUDA
    graph they are the graph's outputs: read them before the next update)."""

    def __call__(self, batch) -> Tensors: ...

    def close(self) -> None: ...


Step = Callable[[Tensors], Tensors]  # the gradient step on a batch's tensors: its metrics


class GradientStep:
    """The method's loss on the batch, one backward, every optimizer stepped."""

    def __init__(self, algo, nets, frozen, optimizers: dict, settings: LearnerSettings):
        self.algo, self.nets, self.frozen, self.settings = algo, nets, frozen, settings
        self.optimizers = list(optimizers.values())

    def __call__(self, tensors: Tensors) -> Tensors:
        loss, metrics = self.algo.loss(self.nets, self.frozen, tensors, self.settings.gamma, self.settings.method)
        step(loss, self.optimizers)
        metrics["loss"] = loss.detach()
        return metrics


class OverlappedStep:
    """β-DQN's gradient step with β on its own thread (on a CPU): β(·|s′) is handed to Q's target as soon as
    β's forward pass has it, then β's backward and step run beside Q's (torch releases the GIL inside its
    kernels; the math is the one-thread step's).

    The two threads speak through `queue.SimpleQueue`s (C, no Python-level lock): the main thread's waits are
    where a Ctrl-C lands, and inside `Future.result` (a `threading.Condition`) an interrupt that lands between
    two of its bytecodes can leave its lock held, so that β's thread blocks forever handing its result over and
    the run's close waits on it, or can make a RuntimeError of the interrupt."""

    def __init__(self, algo, nets, frozen, optimizers: dict, settings: LearnerSettings):
        self.algo, self.nets, self.frozen, self.settings = algo, nets, frozen, settings
        self.beta_optimizer = optimizers["beta"]
        self.value_optimizers = [opt for name, opt in optimizers.items() if name != "beta"]
        self.todo: queue.SimpleQueue = queue.SimpleQueue()  # (step number, what β's step needs); None: end
        self.done: queue.SimpleQueue = queue.SimpleQueue()  # (step number, β(·|s′), then the metrics | an error)
        self.steps = 0
        # set by β's thread as it ends: asked instead of `Thread.is_alive()`, which an interrupt landing inside it
        # can make say "stopped" of a running thread (CPython 3.11's bpo-45274 handling)
        self.ended = threading.Event()
        # the thread holds the queues, and nothing between jobs (each brings β, its optimizer and the batch): a
        # learner never closed is still collected, and its thread ended with it
        self.thread = threading.Thread(target=_beta_steps, args=(self.todo, self.done, self.ended), name="beta",
                                       daemon=True)
        self.thread.start()
        self._end = weakref.finalize(self, self.todo.put, None)

    def _next(self, n: int):
        """β's thread's next word on step n (a step the main thread left by an error may have left words)."""
        while True:
            try:
                got, value = self.done.get(timeout=WAIT_ROUND_S)
            except queue.Empty:
                if self.ended.is_set():
                    raise RuntimeError("β's update thread has ended") from None
                continue
            if got != n:
                continue
            if isinstance(value, BaseException):
                try:
                    raise value
                finally:  # (the error's traceback holds this frame: no cycle through it back to the error)
                    value = None
            return value

    def __call__(self, batch: Tensors) -> Tensors:
        if not self._end.alive:
            raise RuntimeError("the learner is closed")
        algo = self.algo
        self.steps += 1
        n = self.steps
        self.todo.put((n, algo.behaviour_part, self.nets["beta"], self.beta_optimizer, batch))
        q_sa, q_next_target = algo.value_forward(self.nets, self.frozen, batch)
        loss_q, metrics = algo.value_loss(q_sa, q_next_target, self._next(n), batch, self.settings.gamma,
                                          self.settings.method, self.nets, self.frozen)
        step(loss_q, self.value_optimizers)
        metrics.update(self._next(n))  # β is stepped before anything reads its parameters again
        metrics["loss"] = loss_q.detach() + metrics["loss_beta"]
        return metrics

    def close(self) -> None:
        """β's thread ends after the step in hand (if any); not waited for past CLOSE_WAIT_S (a daemon)."""
        self._end()
        self.thread.join(timeout=CLOSE_WAIT_S)


def _beta_steps(todo: queue.SimpleQueue, done: queue.SimpleQueue, ended: threading.Event) -> None:
    """β's thread: each job's forward pass (β(·|s′) handed over at once), then its backward and step."""
    try:
        while (job := todo.get()) is not None:
            n, behaviour_part, beta, optimizer, batch = job
            try:
                loss_beta, probs_next, metrics = behaviour_part(beta, batch["obs"], batch["next_obs"], batch["action"])
                done.put((n, probs_next))
                step(loss_beta, [optimizer])
                done.put((n, metrics))
            except BaseException as e:  # noqa: BLE001 - raised in the main thread, which waits for it
                done.put((n, e))
            # (held no longer)
            job = behaviour_part = beta = optimizer = batch = loss_beta = probs_next = metrics = None
    finally:
        ended.set()  # (only this thread takes the Event's lock; the learner's is_set() takes none)


class Eager:
    """The step run as it is, on each batch's tensors."""

    def __init__(self, step: Step, batches: Batches):
        self.step, self.batches = step, batches

    def __call__(self, batch) -> Tensors:
        return self.step(self.batches.on_device(batch))

    def close(self) -> None:
        getattr(self.step, "close", lambda: None)()


class Graphed:
    """On a GPU, the whole step (forward, backward, Adam) as one CUDA graph replayed per batch: at batch 32
    an update is a few hundred tiny kernels, and launching them is the cost. The first GRAPH_WARMUP updates
    run eagerly on a side stream (as capture requires), the next captures the step once, and every update
    replays it on new inputs."""

    def __init__(self, step: Step, batches: Batches, optimizers: list):
        self.step, self.batches, self.optimizers = step, batches, optimizers
        self.device = batches.device
        self.graph: torch.cuda.CUDAGraph | None = None
        self.eager_updates = 0  # this process's eager updates before the graph (a resumed run warms up too)
        self.static: Tensors = {}  # graph inputs; metrics are its outputs
        self.static_metrics: Tensors = {}

    def __call__(self, batch) -> Tensors:
        if self.graph is None:
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            warming = self.eager_updates < GRAPH_WARMUP
            with torch.cuda.stream(side):
                if warming:
                    metrics = self.step(self.batches.on_device(batch))
                    self.eager_updates += 1
                else:
                    self.static = self.batches.on_device(batch)
            torch.cuda.current_stream(self.device).wait_stream(side)
            if warming:
                return metrics
            for opt in self.optimizers:
                opt.zero_grad(set_to_none=True)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):  # records; nothing runs until replay
                self.static_metrics = self.step(self.static)
            self.graph = graph
        else:
            for k, v in self.batches.host(batch).items():
                self.static[k].copy_(v, non_blocking=True)
        self.graph.replay()
        return self.static_metrics

    def close(self) -> None:
        pass


def update_path(step: Step, batches: Batches, optimizers: list, graphed: bool) -> UpdatePath:
    """The path chosen once: the step as a CUDA graph (`graphed`, on a GPU) or eagerly."""
    return Graphed(step, batches, optimizers) if graphed else Eager(step, batches)


class Learner:
    """One seed as its run sees it: its networks and target copies, the weights it broadcasts, its state
    (the networks, the optimizer state, the update and weight counts) and its `update`. `Learner.solo` makes a
    seed that learns alone; `learner.packed.PackedLearner` makes its seeds' with no path of their own."""

    def __init__(self, settings: LearnerSettings, spec, algo, nets: nn.ModuleDict, frozen: nn.ModuleDict,
                 device: torch.device, optimizer_state: OptimizerState, path: UpdatePath | None):
        self.settings, self.spec, self.algo = settings, spec, algo
        self.nets, self.frozen, self.device = nets, frozen, device
        self.optimizer_state, self.path = optimizer_state, path
        self.target_names = algo.targets(settings.method)
        self.packer = make_packer(spec)  # how observations are packed for replay (what a batch's "obs" holds)
        self.updates = 0
        self.version = 0

    @classmethod
    def solo(cls, settings: LearnerSettings, spec, device: torch.device | None = None) -> Learner:
        algo = algorithm(settings.method.algo)
        device = device or torch.device("cpu")
        nets, frozen = make_modules(algo, spec, settings)
        nets, frozen = nets.to(device), frozen.to(device)
        graphed = settings.cuda_graphs and device.type == "cuda"
        adams = Adams(nets, settings.lr, graphed)
        overlap = hasattr(algo, "behaviour_part") and settings.beta_thread and not graphed
        gradient_step = (OverlappedStep if overlap else GradientStep)(algo, nets, frozen, adams.by_network, settings)
        path = update_path(gradient_step, Batches(spec, settings.method.algo, device),
                           list(adams.by_network.values()), graphed)
        return cls(settings, spec, algo, nets, frozen, device, adams, path)

    def update(self, batch) -> Tensors:
        """One gradient step; returns detached metric tensors (no device sync). With CUDA graphs they are the
        graph's outputs: read them before the next update."""
        if self.path is None:
            raise TypeError("a packed seed is updated with its pack (PackedLearner.update)")
        metrics = self.path(batch)
        self.updates += 1
        return metrics

    def sync_target(self) -> None:
        """The hard target copy of every network that has one."""
        with torch.no_grad():
            for name in self.target_names:
                for target, online in zip(self.frozen[name].parameters(), self.nets[name].parameters(), strict=True):
                    target.copy_(online)  # in place: a CUDA graph keeps reading the same memory

    def weights(self) -> dict:
        """The acting networks' parameters in one numpy buffer (`flat_weights`), stamped with a version by
        the caller."""
        return flat_weights({name: self.nets[name] for name in self.algo.acting_networks(self.settings.method)})

    def state_dict(self) -> dict:
        return {"nets": _cloned(self.nets.state_dict()), "frozen": _cloned(self.frozen.state_dict()),
                "optimizers": self.optimizer_state.state_dict(), "updates": self.updates, "version": self.version}

    def load_state_dict(self, state: dict) -> None:
        self.nets.load_state_dict(state["nets"])
        self.frozen.load_state_dict(state["frozen"])
        self.optimizer_state.load_state_dict(state["optimizers"])
        self.updates, self.version = int(state["updates"]), int(state["version"])

    def close(self) -> None:
        if self.path is not None:
            self.path.close()


def _cloned(state: dict) -> dict:
    """A state dict whose tensors own their memory (a packed seed's are views of its pack's: saved as they
    are, they would carry every seed's parameters)."""
    for key, value in state.items():
        state[key] = value.clone()
    return state
