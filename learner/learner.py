"""The learner's computation: one update on a batch, the target copy, weights, state.

The process that hosts it (`driver.run`) decides when to update; this class only computes.
"""

from __future__ import annotations

import copy
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import torch
from torch import nn

from learner.networks import flat_weights
from methods import algorithm, extras
from replay_service.buffer import make_packer
from replay_service.schema import Schema

_TORCH_TYPES = {int: torch.int64, float: torch.float32, bool: torch.bool}  # an extra's batch tensor by kind

GRAPH_WARMUP = 3  # eager updates before the CUDA graph is captured


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("--device cuda: no CUDA device is available here; use --device auto or cpu")
    return torch.device(name)


def make_modules(algo, spec, cfg) -> tuple[nn.ModuleDict, nn.ModuleDict]:
    """A seed's modules, on the CPU, from `cfg.seed`: the trained networks, and what the loss reads but no
    optimizer steps (`frozen`): target copies (under their network's name) and an algorithm's fixed
    modules (RND's random target network, running statistics)."""
    torch.manual_seed(cfg.seed)
    nets = nn.ModuleDict(algo.networks(spec, cfg))
    fixed = getattr(algo, "fixed", lambda spec, cfg: {})(spec, cfg)
    frozen = nn.ModuleDict({**{n: copy.deepcopy(nets[n]) for n in algo.targets(cfg)}, **fixed})
    return nets, frozen.requires_grad_(False)


class Networks:
    """One seed's networks as its run sees them: the target copy, the weights it broadcasts, its state.
    `Learner` (a seed alone) and `learner.packed.Seat` (a seed of a pack) differ in where the optimizer
    state lives (`_optimizer_states`, `_load_optimizer_states`)."""

    cfg: object
    algo: object
    nets: nn.ModuleDict
    frozen: nn.ModuleDict
    target_names: tuple[str, ...]
    updates: int
    version: int

    def sync_target(self) -> None:
        """The hard target copy of every network that has one."""
        with torch.no_grad():
            for name in self.target_names:
                for target, online in zip(self.frozen[name].parameters(), self.nets[name].parameters(), strict=True):
                    target.copy_(online)  # in place: a CUDA graph keeps reading the same memory

    def weights(self) -> dict:
        """The acting networks' parameters in one numpy buffer (`flat_weights`), stamped with a version by
        the caller."""
        return flat_weights({name: self.nets[name] for name in self.algo.acting_networks(self.cfg)})

    def state_dict(self) -> dict:
        return {"nets": _cloned(self.nets.state_dict()), "frozen": _cloned(self.frozen.state_dict()),
                "optimizers": self._optimizer_states(), "updates": self.updates, "version": self.version}

    def load_state_dict(self, state: dict) -> None:
        self.nets.load_state_dict(state["nets"])
        self.frozen.load_state_dict(state["frozen"])
        self._load_optimizer_states(state["optimizers"])
        self.updates, self.version = int(state["updates"]), int(state["version"])

    def _optimizer_states(self) -> dict:
        raise NotImplementedError

    def _load_optimizer_states(self, states: dict) -> None:
        raise NotImplementedError


def _cloned(state: dict) -> dict:
    """A state dict whose tensors own their memory (a packed seed's are views of its pack's: saved as they
    are, they would carry every seed's parameters)."""
    for key, value in state.items():
        state[key] = value.clone()
    return state


class Updates:
    """How an update is run, for one seed (`Learner`) or a pack of seeds (`learner.packed.PackedLearner`):
    a batch to tensors on the device, the eager update (`_update_eager`, the subclass's), and on a GPU the
    whole update (forward, backward, Adam) as one CUDA graph replayed per batch: at batch 32 the update is a
    few hundred tiny kernels, and launching them is the cost."""

    cfg: object
    device: torch.device
    optimizers: dict

    def _setup_updates(self, cfg, spec) -> None:
        self.graphed = cfg.cuda_graphs and self.device.type == "cuda"
        self.graph = None
        self.eager_updates = 0  # this process's eager updates before the graph (a resumed run warms up too)
        self.static: dict[str, torch.Tensor] = {}  # graph inputs; metrics are its outputs
        self.static_metrics: dict[str, torch.Tensor] = {}
        self.packer = make_packer(spec)
        self.extras = Schema(extras(cfg.algo)).extras  # the method's per-step fields, in every batch
        self.updates = 0

    def _adam(self, params) -> torch.optim.Adam:
        """Fused (one kernel for all its parameters); capturable by a CUDA graph where the update is one."""
        return torch.optim.Adam(params, lr=self.cfg.lr, fused=True, capturable=self.graphed)

    def _host_tensors(self, batch: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
        # float32 once here, not in every forward pass (3 per β-DQN update); torch.tensor copies the
        # rest: arrays that come through Ray's object store are read-only
        out = {k: torch.from_numpy(self.packer.unpack(batch[k]).astype(np.float32)) for k in ("obs", "next_obs")}
        out["action"] = torch.tensor(batch["action"], dtype=torch.int64)
        out["reward"] = torch.tensor(batch["reward"], dtype=torch.float32)
        out["terminated"] = torch.tensor(batch["terminated"], dtype=torch.bool)
        for f in self.extras:  # (integers as int64: what indexing wants)
            out[f.name] = torch.tensor(batch[f.name], dtype=_TORCH_TYPES[f.kind])
        return out

    def _to_tensors(self, batch) -> dict[str, torch.Tensor]:
        return {k: v.to(self.device, non_blocking=True) for k, v in self._host_tensors(batch).items()}

    def update(self, batch) -> dict[str, torch.Tensor]:
        """One gradient step; returns detached metric tensors (no device sync). With CUDA graphs they are the
        graph's outputs: read them before the next update."""
        metrics = self._update_graphed(batch) if self.graphed else self._update_now(self._to_tensors(batch))
        self.updates += 1
        return metrics

    def _update_now(self, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        return self._update_eager(tensors)

    def _update_eager(self, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def _update_graphed(self, batch) -> dict[str, torch.Tensor]:
        """The first GRAPH_WARMUP updates run eagerly on a side stream (as CUDA graph capture requires),
        the next captures the update once, and every update replays it on new inputs."""
        if self.graph is None:
            side = torch.cuda.Stream(self.device)
            side.wait_stream(torch.cuda.current_stream(self.device))
            warming = self.eager_updates < GRAPH_WARMUP
            with torch.cuda.stream(side):
                if warming:
                    metrics = self._update_eager(self._to_tensors(batch))
                    self.eager_updates += 1
                else:
                    self.static = self._to_tensors(batch)
            torch.cuda.current_stream(self.device).wait_stream(side)
            if warming:
                return metrics
            for opt in self.optimizers.values():
                opt.zero_grad(set_to_none=True)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):  # records; nothing runs until replay
                self.static_metrics = self._update_eager(self.static)
            self.graph = graph
        else:
            for k, v in self._host_tensors(batch).items():
                self.static[k].copy_(v, non_blocking=True)
        self.graph.replay()
        return self.static_metrics

    @staticmethod
    def _step(loss: torch.Tensor, optimizers) -> None:
        for opt in optimizers:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        for opt in optimizers:
            opt.step()

    def close(self) -> None:
        pass


class Learner(Networks, Updates):
    """One seed's learner: its networks (`Networks`) and their update (`Updates`)."""

    def __init__(self, cfg, spec, device: torch.device | None = None):
        self.cfg, self.spec = cfg, spec
        self.algo = algorithm(cfg.algo)
        self.device = device or torch.device("cpu")
        nets, frozen = make_modules(self.algo, spec, cfg)
        self.nets, self.frozen = nets.to(self.device), frozen.to(self.device)
        self.target_names = self.algo.targets(cfg)
        self._setup_updates(cfg, spec)
        # one Adam per network; stepping them all after one backward of the summed loss is the same as one
        # Adam over every parameter
        self.optimizers = {name: self._adam(net.parameters()) for name, net in self.nets.items()}
        # β-DQN on CPU: β's forward, backward and Adam step on a second thread while Q does its own
        # (torch releases the GIL inside its kernels; the math is the same as the one-thread update)
        self.beta_thread = None
        if hasattr(self.algo, "behaviour_part") and cfg.beta_thread and not self.graphed:
            self.beta_thread = ThreadPoolExecutor(1, thread_name_prefix="beta")
        self.version = 0

    def _update_now(self, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self.beta_thread is not None:
            return self._update_overlapped(tensors)
        return self._update_eager(tensors)

    def _update_eager(self, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        loss, metrics = self.algo.loss(self.nets, self.frozen, tensors, self.cfg.gamma, self.cfg)
        self._step(loss, self.optimizers.values())
        metrics["loss"] = loss.detach()
        return metrics

    def _update_overlapped(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """β-DQN's update with β on its own thread: β(·|s′) is handed to Q's target as soon as β's
        forward pass has it, then β's backward and step run beside Q's."""
        algo, beta_next = self.algo, Future()

        def beta_step() -> dict:
            try:
                loss_beta, probs_next, metrics = algo.behaviour_part(
                    self.nets["beta"], batch["obs"], batch["next_obs"], batch["action"])
            except BaseException as e:
                beta_next.set_exception(e)
                raise
            beta_next.set_result(probs_next)
            self._step(loss_beta, [self.optimizers["beta"]])
            return metrics

        job = self.beta_thread.submit(beta_step)
        q_sa, q_next_target = algo.value_forward(self.nets, self.frozen, batch)
        loss_q, metrics = algo.value_loss(q_sa, q_next_target, beta_next.result(), batch, self.cfg.gamma, self.cfg,
                                          self.nets, self.frozen)
        self._step(loss_q, [opt for name, opt in self.optimizers.items() if name != "beta"])
        metrics.update(job.result())  # β is stepped before anything reads its parameters again
        metrics["loss"] = loss_q.detach() + metrics["loss_beta"]
        return metrics

    def close(self) -> None:
        if self.beta_thread is not None:
            self.beta_thread.shutdown()

    def _optimizer_states(self) -> dict:
        return {name: opt.state_dict() for name, opt in self.optimizers.items()}

    def _load_optimizer_states(self, states: dict) -> None:
        for name, opt in self.optimizers.items():
            opt.load_state_dict(states[name])
            for group in opt.param_groups:  # the saved flag is the saving process's (CPU or GPU)
                group["capturable"] = self.graphed
