"""K seeds' learners as one: their parameters stacked, one vectorised update, one optimizer step.

Seeds of one environment, method and configuration differ only in their numbers, so their K networks are
one network with a leading seed axis. `PackedLearner` keeps every parameter, buffer and Adam moment as
one (K, ...) tensor and computes the K losses with `torch.func.vmap` over `functional_call` of the
method's own `loss` (nothing of a method is written twice); the sum of the K losses has each seed's own
gradient in its slice, and Adam, being elementwise, steps the K seeds in one fused kernel as K Adams
would. On a GPU the packed update is one CUDA graph, as a solo learner's is (`learner.learner.Learner`).

Everything else of a seed stays its own: each run of a pack holds its seed's `Learner`, a view of the pack
(its networks are views of the stacked tensors, its optimizer state a slice of the pack's), which copies its
targets, broadcasts its weights and saves and loads its state in the solo learner's format: a packed seed's
checkpoint is a solo one.
The pack updates in lockstep: update n of every seed at once (`beta_dqn.driver.pack` decides when).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call, vmap

from learner.learner import Batches, Learner, LearnerSettings, Tensors, adam, make_modules, step, update_path
from learner.methods import algorithm

TRAINED = "nets."  # the stacked tensors an optimizer steps; the rest ("frozen.") only the loss reads


class _Losses(nn.Module):
    """A seed's networks and frozen modules under one module, whose forward is the method's loss."""

    def __init__(self, algo, nets: nn.ModuleDict, frozen: nn.ModuleDict, settings: LearnerSettings):
        super().__init__()
        self.algo, self.settings = algo, settings
        self.nets, self.frozen = nets, frozen

    def forward(self, batch: Tensors):
        loss, metrics = self.algo.loss(self.nets, self.frozen, batch, self.settings.gamma, self.settings.method)
        return loss, metrics


def _rebind(module: nn.Module, name: str, tensor: torch.Tensor) -> None:
    """Make `module`'s parameter or buffer `name` (dotted) the tensor given (a view of the stacked one)."""
    owner_name, _, leaf = name.rpartition(".")
    owner = module.get_submodule(owner_name)
    if leaf in owner._parameters:
        owner._parameters[leaf] = nn.Parameter(tensor, requires_grad=False)
    else:
        owner._buffers[leaf] = tensor


class StackedBatches(Batches):
    """The K seeds' batches (seed k's from its own replay) as tensors stacked on a leading seed axis."""

    def host(self, batches: list[dict]) -> Tensors:  # type: ignore[override]  # K batches, not one: the pack's own
        each = [super(StackedBatches, self).host(batch) for batch in batches]
        return {key: torch.stack([t[key] for t in each]) for key in each[0]}


class PackedStep:
    """Every seed's loss on its batch (slice k of the tensors), one backward of their sum (seed k's gradient
    lands in slice k) and one optimizer step; the metrics, stacked over the seeds."""

    def __init__(self, pack: PackedLearner):
        self.pack = pack

    def __call__(self, tensors: Tensors) -> Tensors:
        pack = self.pack

        def one_seed(params, buffers, batch):
            return functional_call(pack.template, (params, buffers), (batch,))

        if pack.vectorised:
            losses, metrics = vmap(one_seed)(pack.params, pack.buffers, tensors)
        else:
            params = {name: p.unbind(0) for name, p in pack.params.items()}  # views: gradients flow to the pack
            each = [one_seed({name: p[k] for name, p in params.items()},
                             {name: b[k] for name, b in pack.buffers.items()},
                             {key: t[k] for key, t in tensors.items()}) for k in range(pack.size)]
            losses = torch.stack([loss for loss, _ in each])
            metrics = {name: torch.stack([m[name] for _, m in each]) for name in each[0][1]}
        step(losses.sum(), pack.optimizers.values())
        metrics["loss"] = losses.detach()
        return metrics


class PackedLearner:
    """The learners of seeds `seeds` (one configuration, K seeds) as one; `seats[k]` is seed k's `Learner`,
    whose optimizer state is its slice of the pack's (`_PackSlice`) and whose update is the pack's."""

    def __init__(self, seeds: list[LearnerSettings], spec, device: torch.device | None = None,
                 vectorised: bool | None = None):
        """`vectorised`: one vmapped computation for all seeds (default on a GPU, where an update is a few
        hundred tiny kernels and their launches are the cost), else the seeds' losses one after another with
        each seed's own kernels (default on a CPU, where the arithmetic is the cost and vmap's batched
        kernels are slower than the solo ones); both end in one optimizer step for the pack."""
        settings = seeds[0]
        self.seeds, self.spec = seeds, spec
        self.algo = algorithm(settings.method.algo)
        self.device = device or torch.device("cpu")
        self.vectorised = self.device.type == "cuda" if vectorised is None else vectorised
        self.graphed = settings.cuda_graphs and self.device.type == "cuda"
        # each seed's modules exactly as its solo learner makes them (same seed, same order of draws)
        holders = [_Losses(self.algo, *make_modules(self.algo, spec, s), settings) for s in seeds]
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
        # one Adam per network, over its stacked parameters in the solo network's order (so a seed's slice
        # of the optimizer state is the solo optimizer's state)
        self.optimizers = {name: adam([self.params[f"{TRAINED}{name}.{pn}"] for pn, _ in net.named_parameters()],
                                      settings.lr, self.graphed)
                           for name, net in holders[0].nets.items()}
        self.path = update_path(PackedStep(self), StackedBatches(spec, settings.method.algo, self.device),
                                list(self.optimizers.values()), self.graphed)
        self.seats = [Learner(s, spec, self.algo, holder.nets, holder.frozen, self.device, _PackSlice(self, k),
                              path=None) for k, (s, holder) in enumerate(zip(seeds, holders, strict=True))]

    @property
    def size(self) -> int:
        return len(self.seeds)

    def update(self, batches: list[dict]) -> list[Tensors]:
        """One gradient step of every seed, seed k on `batches[k]`; each seed's metrics (device tensors,
        no sync; with CUDA graphs views of the graph's outputs: read them before the next update)."""
        if len(batches) != self.size:
            raise ValueError(f"a pack of {self.size} seeds needs {self.size} batches, not {len(batches)}")
        metrics = self.path(batches)
        for seat in self.seats:
            seat.updates += 1
        return [{name: value[k] for name, value in metrics.items()} for k in range(self.size)]

    def close(self) -> None:
        self.path.close()


class _PackSlice:
    """Seed k's optimizer state: slice k of each packed Adam's, saved and loaded as the solo optimizer's."""

    def __init__(self, pack: PackedLearner, k: int):
        self.pack, self.k = pack, k

    def state_dict(self) -> dict:
        out = {}
        for name, opt in self.pack.optimizers.items():
            whole = opt.state_dict()
            out[name] = {"state": {i: {key: value.clone() if key == "step" else value[self.k].clone()
                                       for key, value in per_param.items()}
                                   for i, per_param in whole["state"].items()},
                         "param_groups": whole["param_groups"]}
        return out

    def load_state_dict(self, states: dict) -> None:
        """Every seed of a pack has taken the same number of steps."""
        for name, opt in self.pack.optimizers.items():
            saved = states[name]["state"]
            for i, p in enumerate(opt.param_groups[0]["params"]):
                if i not in saved:  # a seed that has not stepped yet
                    continue
                mine = saved[i]
                step_count = torch.as_tensor(mine["step"], dtype=torch.float32).to(p.device)
                state = opt.state[p]
                if not state:
                    state["step"] = step_count.clone()
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                elif not torch.equal(state["step"], step_count):
                    raise ValueError(f"seed {self.pack.seeds[self.k].seed}'s optimizer has taken {int(step_count)} "
                                     f"steps, the pack's {int(state['step'])}: a pack's seeds must be at the same "
                                     "update")
                with torch.no_grad():
                    state["exp_avg"][self.k].copy_(mine["exp_avg"])
                    state["exp_avg_sq"][self.k].copy_(mine["exp_avg_sq"])
            for group in opt.param_groups:
                group["capturable"] = self.pack.graphed
