"""K seeds' learners as one: their parameters stacked, one vectorised update, one optimizer step.

Seeds of one environment, method and configuration differ only in their numbers, so their K networks are
one network with a leading seed axis. `PackedLearner` keeps every parameter, buffer and Adam moment as
one (K, ...) tensor and computes the K losses with `torch.func.vmap` over `functional_call` of the
method's own `loss` (nothing of a method is written twice); the sum of the K losses has each seed's own
gradient in its slice, and Adam, being elementwise, steps the K seeds in one fused kernel as K Adams
would. On a GPU the packed update is one CUDA graph, as a solo learner's is (`learner.learner.Learner`).

Everything else of a seed stays its own: each run of a pack holds a `Seat`, a seed's view of the pack
(its networks are views of the stacked tensors), which copies its targets, broadcasts its weights and
saves and loads its state in the solo learner's format: a packed seed's checkpoint is a solo one.
The pack updates in lockstep: update n of every seed at once (`driver.pack` decides when).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call, vmap

from learner.learner import Networks, Updates, make_modules
from methods import algorithm

TRAINED = "nets."  # the stacked tensors an optimizer steps; the rest ("frozen.") only the loss reads


class _Losses(nn.Module):
    """A seed's networks and frozen modules under one module, whose forward is the method's loss."""

    def __init__(self, algo, nets: nn.ModuleDict, frozen: nn.ModuleDict, cfg):
        super().__init__()
        self.algo, self.cfg = algo, cfg
        self.nets, self.frozen = nets, frozen

    def forward(self, batch: dict[str, torch.Tensor]):
        loss, metrics = self.algo.loss(self.nets, self.frozen, batch, self.cfg.gamma, self.cfg)
        return loss, metrics


def _rebind(module: nn.Module, name: str, tensor: torch.Tensor) -> None:
    """Make `module`'s parameter or buffer `name` (dotted) the tensor given (a view of the stacked one)."""
    owner_name, _, leaf = name.rpartition(".")
    owner = module.get_submodule(owner_name)
    if leaf in owner._parameters:
        owner._parameters[leaf] = nn.Parameter(tensor, requires_grad=False)
    else:
        owner._buffers[leaf] = tensor


class PackedLearner(Updates):
    """The learners of seeds `cfgs` (one configuration, K seeds) as one; `seats[k]` is seed k's view."""

    def __init__(self, cfgs: list, spec, device: torch.device | None = None, vectorised: bool | None = None):
        """`vectorised`: one vmapped computation for all seeds (default on a GPU, where an update is a few
        hundred tiny kernels and their launches are the cost), else the seeds' losses one after another with
        each seed's own kernels (default on a CPU, where the arithmetic is the cost and vmap's batched
        kernels are slower than the solo ones); both end in one optimizer step for the pack."""
        cfg = cfgs[0]
        self.cfg, self.cfgs, self.spec = cfg, cfgs, spec
        self.algo = algorithm(cfg.algo)
        self.device = device or torch.device("cpu")
        self.vectorised = self.device.type == "cuda" if vectorised is None else vectorised
        self.target_names = self.algo.targets(cfg)
        # each seed's modules exactly as its solo learner makes them (same seed, same order of draws)
        holders = [_Losses(self.algo, *make_modules(self.algo, spec, c), cfg) for c in cfgs]
        self.template = holders[0]
        self.params = {name: torch.stack([dict(h.named_parameters())[name].detach() for h in holders])
                       .to(self.device) for name, _ in holders[0].named_parameters()}
        for name, p in self.params.items():
            p.requires_grad_(name.startswith(TRAINED))
        self.buffers = {name: torch.stack([dict(h.named_buffers())[name] for h in holders]).to(self.device)
                        for name, _ in holders[0].named_buffers()}
        for k, holder in enumerate(holders):  # seed k's modules now read and write slice k of the pack
            for name, p in self.params.items():
                _rebind(holder, name, p.detach()[k])
            for name, b in self.buffers.items():
                _rebind(holder, name, b[k])
        self._setup_updates(cfg, spec)
        # one Adam per network, over its stacked parameters in the solo network's order (so a seed's slice
        # of the optimizer state is the solo optimizer's state)
        self.optimizers = {name: self._adam([self.params[f"{TRAINED}{name}.{pn}"] for pn, _ in net.named_parameters()])
                           for name, net in holders[0].nets.items()}
        self.seats = [Seat(self, k, holder) for k, holder in enumerate(holders)]

    @property
    def size(self) -> int:
        return len(self.cfgs)

    def _host_tensors(self, batches: list[dict]) -> dict[str, torch.Tensor]:
        """The K seeds' batches (seed k's from its own replay), stacked on a leading seed axis."""
        each = [Updates._host_tensors(self, batch) for batch in batches]
        return {key: torch.stack([t[key] for t in each]) for key in each[0]}

    def _update_eager(self, tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Every seed's loss on its batch (slice k of `tensors`), one backward of their sum (seed k's gradient
        lands in slice k) and one optimizer step; the metrics, stacked over the seeds."""
        def one_seed(params, buffers, batch):
            return functional_call(self.template, (params, buffers), (batch,))

        if self.vectorised:
            losses, metrics = vmap(one_seed)(self.params, self.buffers, tensors)
        else:
            params = {name: p.unbind(0) for name, p in self.params.items()}  # views: gradients flow to the pack
            each = [one_seed({name: p[k] for name, p in params.items()},
                             {name: b[k] for name, b in self.buffers.items()},
                             {key: t[k] for key, t in tensors.items()}) for k in range(self.size)]
            losses = torch.stack([loss for loss, _ in each])
            metrics = {name: torch.stack([m[name] for _, m in each]) for name in each[0][1]}
        self._step(losses.sum(), self.optimizers.values())
        metrics["loss"] = losses.detach()
        return metrics

    def update(self, batches: list[dict]) -> list[dict[str, torch.Tensor]]:
        """One gradient step of every seed, seed k on `batches[k]`; each seed's metrics (device tensors,
        no sync; with CUDA graphs views of the graph's outputs: read them before the next update)."""
        if len(batches) != self.size:
            raise ValueError(f"a pack of {self.size} seeds needs {self.size} batches, not {len(batches)}")
        metrics = super().update(batches)
        for seat in self.seats:
            seat.updates += 1
        return [{name: value[k] for name, value in metrics.items()} for k in range(self.size)]


class Seat(Networks):
    """Seed k of a pack, as its run sees it: what a solo `Learner` offers the run, except `update` (the pack
    updates every seed at once). Its state is saved and loaded in the solo learner's format."""

    def __init__(self, pack: PackedLearner, k: int, holder: _Losses):
        self.pack, self.k = pack, k
        self.cfg, self.algo, self.device = pack.cfgs[k], pack.algo, pack.device
        self.nets, self.frozen = holder.nets, holder.frozen
        self.target_names = pack.target_names
        self.updates = 0
        self.version = 0

    def update(self, batch):
        raise TypeError("a packed seed is updated with its pack (PackedLearner.update)")

    def close(self) -> None:
        pass

    def _optimizer_states(self) -> dict:
        """Slice k of each packed Adam's state, as the solo optimizer's state_dict would hold it."""
        out = {}
        for name, opt in self.pack.optimizers.items():
            whole = opt.state_dict()
            out[name] = {"state": {i: {key: value.clone() if key == "step" else value[self.k].clone()
                                       for key, value in per_param.items()}
                                   for i, per_param in whole["state"].items()},
                         "param_groups": whole["param_groups"]}
        return out

    def _load_optimizer_states(self, states: dict) -> None:
        """Seed k's Adam state into slice k; every seed of a pack has taken the same number of steps."""
        for name, opt in self.pack.optimizers.items():
            saved = states[name]["state"]
            for i, p in enumerate(opt.param_groups[0]["params"]):
                if i not in saved:  # a seed that has not stepped yet
                    continue
                mine = saved[i]
                step = torch.as_tensor(mine["step"], dtype=torch.float32).to(p.device)
                state = opt.state[p]
                if not state:
                    state["step"] = step.clone()
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                elif not torch.equal(state["step"], step):
                    raise ValueError(f"seed {self.cfg.seed}'s optimizer has taken {int(step)} steps, the pack's "
                                     f"{int(state['step'])}: a pack's seeds must be at the same update")
                with torch.no_grad():
                    state["exp_avg"][self.k].copy_(mine["exp_avg"])
                    state["exp_avg_sq"][self.k].copy_(mine["exp_avg_sq"])
            for group in opt.param_groups:
                group["capturable"] = self.pack.graphed
