"""Packed seeds (`--pack-seeds`): K seeds trained by one vectorised learner are the K solo learners.

"The same" is measured per network as ‖θ_packed − θ_solo‖ / ‖θ_solo‖ over all its parameters (buffers too) ≤
1e-5 after 50 updates with target copies between (on a GPU leaving out 1% of each tensor's elements: the CUDA
test says why). Not elementwise: the vectorised kernels (a grouped convolution, batched matmuls) round
differently from the solo ones (~1e-7), and training amplifies single elements: Adam divides by |g|, so a
near-zero gradient that rounds differently moves its element visibly, and a ReLU unit whose input rounds across
zero passes its gradient in one and not the other. Adam's moments are gradients and show such events whole: they
are checked at 1e-2, enough to catch a misaligned state.
"""

import csv
import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from beta_dqn.configuration.flags import Config, ConfigError, resolve
from beta_dqn.driver.checkpoints import Checkpointer
from beta_dqn.driver.pack import Pack, check_packable, train_pack
from beta_dqn.driver.run import Run, train
from beta_dqn.driver.state import RUN_FILES
from tests.test_learner import batches, packed
from tests.test_learner import solo as solo_learner

ALGOS = ["beta_dqn", "beta_dqn+two_q", "dqn", "bootstrapped_dqn", "ez_greedy", "rnd", "lesson"]
TOLERANCE = 1e-5


def config(algo: str, env: str = "MinAtar/Breakout", **kw):
    algo, _, two_q = algo.partition("+")
    kw.setdefault("wandb", "disabled")
    return resolve(Config.of(env=env, algo=algo, two_q=bool(two_q), beta_thread=False, **kw))


def relative(a: list[torch.Tensor], b: list[torch.Tensor], spare: float = 0.0) -> float:
    """‖a − b‖ / ‖b‖ over tensors a[i], b[i], leaving out of each tensor the share `spare` of its elements that
    differ most (rounded down: none of a tensor under 1 / spare elements)."""
    gaps = []
    for x, y in zip(a, b, strict=True):
        gap = (x.double().cpu() - y.double().cpu()).flatten().abs().sort().values
        gaps.append(gap[:gap.numel() - int(spare * gap.numel())])
    b = torch.cat([t.double().cpu().flatten() for t in b])
    gaps = torch.cat(gaps)
    return float(gaps.norm() / b.norm()) if b.norm() > 0 else float(gaps.norm())


def differences(packed_state: dict, solo_state: dict,
                spare: float = 0.0) -> tuple[tuple[float, str], tuple[float, str]]:
    """The largest relative difference of a network's parameters (networks, frozen modules), leaving out the
    share `spare` of each tensor's elements that differ most, and of an optimizer's moments, between two
    learner states; with where."""
    params, moments = (0.0, ""), (0.0, "")
    for part in ("nets", "frozen"):
        assert list(packed_state[part]) == list(solo_state[part])
        for net in {key.split(".")[0] for key in solo_state[part]}:
            keys = [key for key in solo_state[part] if key.split(".")[0] == net]
            diff = relative([packed_state[part][k] for k in keys], [solo_state[part][k] for k in keys], spare)
            params = max(params, (diff, f"{part}.{net}"))
    for name, solo_opt in solo_state["optimizers"].items():
        packed_opt = packed_state["optimizers"][name]
        # the same Adam (a CUDA graph's is `capturable`, an eager one's not: that flag is the device's)
        assert [{**g, "capturable": None} for g in packed_opt["param_groups"]] == [
            {**g, "capturable": None} for g in solo_opt["param_groups"]]
        assert list(packed_opt["state"]) == list(solo_opt["state"])
        for key in ("exp_avg", "exp_avg_sq"):
            diff = relative([packed_opt["state"][i][key] for i in solo_opt["state"]],
                            [moments_of[key] for moments_of in solo_opt["state"].values()])
            moments = max(moments, (diff, f"{name}.{key}"))
        for i, moments_of in solo_opt["state"].items():
            assert torch.equal(packed_opt["state"][i]["step"].cpu(), moments_of["step"].cpu())
    return params, moments


def assert_same(packed_state: dict, solo_state: dict, what: str, tolerance: float = TOLERANCE,
                moments_tolerance: float | None = 1e-2, spare: float = 0.0) -> None:
    (params, where), (moments, where_m) = differences(packed_state, solo_state, spare)
    assert params <= tolerance, f"{what}: {where} differs by {params:.2e}"
    if moments_tolerance is not None:
        assert moments <= moments_tolerance, f"{what}: {where_m} differs by {moments:.2e}"


def train_both(cfg, spec, seeds=(0, 1, 2), updates=50, device=None, vectorised=None):
    cfgs = [dataclasses.replace(cfg, seed=s) for s in seeds]
    solos = [solo_learner(c, spec, device) for c in cfgs]
    pack = packed(cfgs, spec, device, vectorised=vectorised)
    metrics = []
    for i in range(updates):
        feed = [next(batches(solos[0], 1, seed=1000 * i + k)) for k in range(len(seeds))]
        solo_metrics = [learner.update(batch) for learner, batch in zip(solos, feed, strict=True)]
        metrics.append((solo_metrics, pack.update(feed)))
        if i % 10 == 3:
            for learner in solos:
                learner.sync_target()
            for seat in pack.seats:
                seat.sync_target()
    return solos, pack, metrics


@pytest.mark.parametrize("vectorised", [False, True], ids=["loop", "vmap"])
@pytest.mark.parametrize("algo", ALGOS)
def test_packed_seeds_end_with_the_solo_learners_parameters(algo, vectorised):
    """Both ways of computing a pack's losses (one after another: a CPU's default; vmapped: a GPU's)."""
    cfg, spec = config(algo)
    solos, pack, metrics = train_both(cfg, spec, vectorised=vectorised)
    assert pack.vectorised == vectorised
    for k, solo in enumerate(solos):
        assert_same(pack.seats[k].state_dict(), solo.state_dict(), f"seed {k}")
        assert pack.seats[k].updates == solo.updates == 50
    for solo_metrics, packed_metrics in metrics[-3:]:
        for s, p in zip(solo_metrics, packed_metrics, strict=True):
            assert set(s) == set(p)
            for name in s:
                assert abs(float(s[name]) - float(p[name])) <= 1e-4 * max(1.0, abs(float(s[name]))), name
    # and they learned: every seed moved away from its initial parameters, each its own way
    fresh = solo_learner(cfg, spec).nets["q"].fc1.weight
    assert not torch.equal(fresh, solos[0].nets["q"].fc1.weight)
    assert not torch.equal(pack.seats[0].nets["q"].fc1.weight, pack.seats[1].nets["q"].fc1.weight)


def test_sparing_1_percent_of_each_tensor_still_finds_one_small_tensor_or_moment_of_another_seed():
    """What the CUDA test's `spare` can hide: a single element here and there, not a bias or an output layer
    taken from another seed, nor another seed's Adam moments for one tensor."""
    cfg, spec = config("dqn")
    learners = [solo_learner(dataclasses.replace(cfg, seed=s), spec) for s in (0, 1)]
    for learner in learners:
        learner.update(next(batches(learner, 1)))
    mine, other = (learner.state_dict() for learner in learners)
    (params, _), (moments, _) = differences(mine, learners[0].state_dict(), spare=0.01)
    assert params == moments == 0.0
    for key in ("q.conv.bias", "q.out.bias", "q.out.weight"):
        swapped = {**mine, "nets": {**mine["nets"], key: other["nets"][key]}}
        with pytest.raises(AssertionError, match="nets.q differs"):
            assert_same(swapped, mine, key, spare=0.01)
    index = [k for k in mine["nets"] if k.startswith("q.")].index("q.out.bias")  # Adam "q" holds Q's parameters
    state = {i: dict(s) for i, s in mine["optimizers"]["q"]["state"].items()}
    state[index]["exp_avg"] = other["optimizers"]["q"]["state"][index]["exp_avg"]
    swapped = {**mine, "optimizers": {"q": {**mine["optimizers"]["q"], "state": state}}}
    with pytest.raises(AssertionError, match="q.exp_avg differs"):
        assert_same(swapped, mine, "moments", spare=0.01)


def test_a_seats_state_is_a_solo_learners_both_ways():
    """A packed seed's checkpoint continues as a solo run and a solo checkpoint continues in a pack; the file
    holds one seed (not views of the whole pack)."""
    cfg, spec = config("rnd")  # networks, a fixed network and running statistics
    solos, pack, _ = train_both(cfg, spec, seeds=(0, 1), updates=5)
    seat_state = pack.seats[1].state_dict()
    solo_state = solos[1].state_dict()
    assert seat_state.keys() == solo_state.keys()
    tensors = [*seat_state["nets"].values(), *seat_state["frozen"].values(),
               *(v for opt in seat_state["optimizers"].values() for moments in opt["state"].values()
                 for v in moments.values())]
    assert all(v.untyped_storage().nbytes() == v.numel() * v.element_size() for v in tensors)
    # seed 1 of the pack continues alone; seed 1 alone continues in a new pack (beside a fresh seed 0 loaded
    # from seed 0 of the solo learners): both still agree with the solo learner after more updates
    alone = solo_learner(dataclasses.replace(cfg, seed=1), spec)
    alone.load_state_dict(seat_state)
    again = packed([dataclasses.replace(cfg, seed=s) for s in (0, 1)], spec)
    for seat, solo in zip(again.seats, solos, strict=True):
        seat.load_state_dict(solo.state_dict())
    for i in range(5):
        feed = [next(batches(solos[0], 1, seed=77 + 10 * i + k)) for k in range(2)]
        solos[1].update(feed[1])
        alone.update(feed[1])
        solos[0].update(feed[0])
        again.update(feed)
    assert_same(alone.state_dict(), solos[1].state_dict(), "seed 1 continued alone")
    assert_same(again.seats[1].state_dict(), solos[1].state_dict(), "seed 1 continued in a pack")
    assert_same(again.seats[0].state_dict(), solos[0].state_dict(), "seed 0 continued in a pack")
    assert again.seats[1].updates == 10


def test_seeds_at_different_updates_are_refused_in_one_pack():
    cfg, spec = config("dqn")
    solos, _, _ = train_both(cfg, spec, seeds=(0, 1), updates=3)
    solos[1].update(next(batches(solos[1], 1)))
    pack = packed([dataclasses.replace(cfg, seed=s) for s in (0, 1)], spec)
    pack.seats[0].load_state_dict(solos[0].state_dict())
    with pytest.raises(ValueError, match="seed 1's optimizer has taken 4 steps, the pack's 3"):
        pack.seats[1].load_state_dict(solos[1].state_dict())


def test_only_one_configuration_packs():
    cfg, _ = config("dqn")
    check_packable([cfg, dataclasses.replace(cfg, seed=1, out="elsewhere")])
    with pytest.raises(ConfigError, match="--lr: the seeds of a pack share one configuration"):
        check_packable([cfg, dataclasses.replace(cfg, seed=1, lr=1e-3)])
    with pytest.raises(ConfigError, match="a pack holds each seed once"):
        check_packable([cfg, dataclasses.replace(cfg, out="x")])


def short(tmp_path, name, algo, seed, **kw):
    base = dict(runtime="serial", actors=2, envs_per_actor=2, total_steps=2000, learning_starts=500,
                eval_every=1000, eval_episodes=3, progress=False, log_every=0.2,
                checkpoint_every=1000, out=str(tmp_path / f"{name}{seed}"), seed=seed)
    base.update(kw)
    return config(algo, **base)


def evals(run_dir: Path) -> np.ndarray:
    lines = (run_dir / "evals.csv").read_text().splitlines()
    return np.array([[float(x) for x in line.split(",")] for line in lines[1:]])


@pytest.mark.parametrize("algo", ["beta_dqn", "lesson"])
def test_a_serial_pack_runs_each_seed_as_its_solo_run(tmp_path, algo):
    """The same updates at the same points of each seed's run: evaluations, counters and the final
    checkpoints agree with two solo runs; the run directories hold the same files."""
    seeds = (0, 1)
    solo = [train(*short(tmp_path, "solo", algo, s)) for s in seeds]
    made = [short(tmp_path, "pack", algo, s) for s in seeds]
    packed = train_pack([cfg for cfg, _ in made], made[0][1], [None, None])
    for s, a, b in zip(seeds, solo, packed, strict=True):
        for key in ("env_steps", "updates", "episodes", "target_updates", "weight_versions", "replay_inserted"):
            assert a[key] == b[key], key
        np.testing.assert_allclose(evals(tmp_path / f"pack{s}"), evals(tmp_path / f"solo{s}"), rtol=TOLERANCE)
        solo_ckpt = torch.load(tmp_path / f"solo{s}" / "checkpoint.pt")
        packed_ckpt = torch.load(tmp_path / f"pack{s}" / "checkpoint.pt")
        # 375 updates on real data: the rounding differences have grown (5e-5 to 1.3e-3 measured), as two solo
        # runs on two kinds of CPU would; two seeds differ by ~1: the same training, not another one
        assert_same(packed_ckpt["learner"], solo_ckpt["learner"], f"seed {s}", tolerance=1e-2,
                    moments_tolerance=None)  # the moments are gradients: the learner-level tests check them
        assert solo_ckpt.keys() == packed_ckpt.keys()
        assert solo_ckpt["arm_source"] == packed_ckpt["arm_source"]
        files = [{p.name for p in (tmp_path / f"{kind}{s}").iterdir()} for kind in ("solo", "pack")]
        assert files[0] == files[1]
        solo_config = json.loads((tmp_path / f"solo{s}" / "config.json").read_text())
        packed_config = json.loads((tmp_path / f"pack{s}" / "config.json").read_text())
        names = ("out", "run_id")  # the directory's name, and the replay namespace made from it
        assert {k: v for k, v in solo_config.items() if k not in names} == {
            k: v for k, v in packed_config.items() if k not in names}


class Stop(Exception):
    pass


def stop_at_checkpoint(monkeypatch, seeds) -> None:
    """Stop a pack (raise Stop) right after any of `seeds` writes its 2,000-step checkpoint."""
    real = Run._checkpoint

    def checkpoint_then_stop(self):
        real(self)
        if self.state.env_steps >= 2000 and self.cfg.seed in seeds:
            raise Stop

    monkeypatch.setattr(Run, "_checkpoint", checkpoint_then_stop)


def test_a_stopped_pack_keeps_every_seeds_checkpoint_and_continues_as_its_seeds_would(tmp_path, monkeypatch):
    """A pack that dies leaves each seed its last checkpoint and its directory free (the resume below claims
    it); continued as a pack it ends where each seed continued alone ends."""
    algo, seeds = "beta_dqn", (0, 1)
    made = [short(tmp_path, "p", algo, s, total_steps=3000) for s in seeds]
    stop_at_checkpoint(monkeypatch, (1,))
    with pytest.raises(Stop):
        train_pack([cfg for cfg, _ in made], made[0][1], [None, None])
    monkeypatch.undo()
    for s in seeds:
        assert torch.load(tmp_path / f"p{s}" / "checkpoint.pt")["counters"]["env_steps"] == 2000
        shutil.copytree(tmp_path / f"p{s}", tmp_path / f"alone{s}")
    from beta_dqn.driver.resume import resume_config

    def resumed(run_dir):
        config, ckpt = resume_config(["--resume", str(run_dir), "--progress", "false"])
        return (*resolve(config), ckpt)

    pack = [resumed(tmp_path / f"p{s}") for s in seeds]
    packed = train_pack([p[0] for p in pack], pack[0][1], [p[2] for p in pack])
    for s, summary in zip(seeds, packed, strict=True):
        cfg, spec, ckpt = resumed(tmp_path / f"alone{s}")
        alone = train(cfg, spec, ckpt)
        assert summary["env_steps"] == alone["env_steps"] == 3000
        assert summary["updates"] == alone["updates"]
        np.testing.assert_allclose(evals(tmp_path / f"p{s}"), evals(tmp_path / f"alone{s}"), rtol=TOLERANCE)


def test_a_pack_that_cannot_start_leaves_no_run(tmp_path, monkeypatch):
    """Refused before anything starts when a seed's directory is taken; a seed that fails to start after
    others did leaves none of them a run (the same command, corrected, goes ahead)."""
    made = [short(tmp_path, "p", "dqn", s) for s in (0, 1)]
    (tmp_path / "p1").mkdir()
    (tmp_path / "p1" / "config.json").write_text("{}")  # someone else's run is there
    with pytest.raises(ConfigError, match="--out: .*p1 already holds a run"):
        Pack([cfg for cfg, _ in made], made[0][1], [None, None])
    assert not (tmp_path / "p0").exists()
    (tmp_path / "p1" / "config.json").unlink()

    import beta_dqn.driver.pack

    def second_fails(cfg, *args, **kw):
        if cfg.seed == 1:
            raise ConfigError("replay", "no Redis answers")
        return Run(cfg, *args, **kw)

    monkeypatch.setattr(beta_dqn.driver.pack, "Run", second_fails)
    with pytest.raises(ConfigError, match="no Redis answers"):
        Pack([cfg for cfg, _ in made], made[0][1], [None, None])
    assert (tmp_path / "p0").is_dir() and not any((tmp_path / "p0" / name).exists() for name in RUN_FILES)
    monkeypatch.undo()
    train_pack([cfg for cfg, _ in made], made[0][1], [None, None])  # the same pack now starts


def test_every_seed_of_a_pack_has_its_own_wandb_run(tmp_path):
    """wandb's default hands a second init in one process the first run: a pack asks for a new one per seed."""
    made = [short(tmp_path, "w", "dqn", s, env="CliffWalk", wandb="offline", total_steps=1000) for s in (0, 1)]
    train_pack([cfg for cfg, _ in made], made[0][1], [None, None])
    ids = [torch.load(tmp_path / f"w{s}" / "checkpoint.pt")["wandb_id"] for s in (0, 1)]
    assert ids[0] and ids[1] and ids[0] != ids[1]
    for s, run_id in zip((0, 1), ids, strict=True):
        assert list((tmp_path / f"w{s}" / "wandb").glob(f"offline-run-*-{run_id}")), f"seed {s}'s W&B run"


def test_seeds_at_different_update_counts_are_one_line_for_a_pack(tmp_path, monkeypatch):
    made = [short(tmp_path, "p", "dqn", s, env="CliffWalk", total_steps=3000) for s in (0, 1)]
    stop_at_checkpoint(monkeypatch, (0, 1))
    with pytest.raises(Stop):
        train_pack([cfg for cfg, _ in made], made[0][1], [None, None])
    monkeypatch.undo()
    ckpts = [torch.load(tmp_path / f"p{s}" / "checkpoint.pt") for s in (0, 1)]
    assert [c["counters"]["env_steps"] for c in ckpts] == [2000, 1000]
    with pytest.raises(ConfigError, match="--resume: the seeds of a pack continue together only from checkpoints "
                                          r"at one update count, got \[125, 375\]"):
        Pack([cfg for cfg, _ in made], made[0][1], ckpts)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("algo", ALGOS)
def test_a_cuda_pack_matches_the_solo_learners_and_its_graph_the_eager_update(algo, monkeypatch):
    """On a GPU, in full float32: cuDNN's default TF32 convolutions round at ~1e-3, differently in the grouped
    convolution of a pack than in a seed's own (5e-3 apart after 50 updates, measured on an H200), so the
    comparison with the solo learners turns TF32 off. Then they agree within 3e-7 on an H200, except after a
    rounding event: RND's seed 2 departs at update 11 in the vmapped kernels (the pack's graph and its eager
    update alike; a seed-by-seed pack on the same GPU stays within 4e-8), and at update 50 Q differs by 1e-3 in
    relative norm, all of it in fc1 (344 elements of its weight and 1 of its bias by more than 1e-4, 7 by more
    than 1e-3): consistent with one hidden unit whose input rounded across zero. So that comparison leaves out
    the 1% of each parameter tensor's elements that differ most (fc1's weight: 1,310), which hides no whole
    small tensor (the test above). The pack's CUDA graph is its eager update, compared in full."""
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", False)
    monkeypatch.setattr(torch.backends.cuda.matmul, "allow_tf32", False)
    cfg, spec = config(algo, device="cuda")
    device = torch.device("cuda")
    solos, pack, _ = train_both(cfg, spec, device=device)
    assert pack.graphed and pack.path.graph is not None
    for k, solo in enumerate(solos):
        assert_same(pack.seats[k].state_dict(), solo.state_dict(), f"seed {k}", spare=0.01)
    cfgs = [dataclasses.replace(cfg, seed=s, cuda_graphs=False) for s in (0, 1, 2)]
    eager = packed(cfgs, spec, device)
    assert not eager.graphed
    for i in range(50):
        feed = [next(batches(solos[0], 1, seed=1000 * i + k)) for k in range(3)]
        eager.update(feed)
        if i % 10 == 3:
            for seat in eager.seats:
                seat.sync_target()
    for k in range(3):
        assert_same(pack.seats[k].state_dict(), eager.seats[k].state_dict(), f"seed {k}, graph", tolerance=1e-6)


def grid_args(tmp_path, name, *extra):
    from beta_dqn.configuration.cli import build_parser

    argv = ["--env", "MinAtar/Breakout", "--algo", "beta_dqn", "--seeds", "0-2", "--actors", "2",
            "--envs-per-actor", "2", "--total-steps", "2000", "--learning-starts", "500", "--eval-every", "1000",
            "--eval-episodes", "3", "--wandb", "disabled", "--progress", "false", "--learner-cpus", "0.5",
            "--out", str(tmp_path / name), *extra]
    return vars(build_parser().parse_args(argv))


@pytest.mark.integration
def test_a_packed_grid_is_the_solo_grid_and_its_report_cannot_tell(ray_cluster, tmp_path):
    """Seeds 0-2 with --pack-seeds 2: a pack of seeds 0 and 1 and seed 2 alone. Serial (deterministic): the
    evaluations are a solo grid's; the report's rows are the same. On Ray: the pack's seeds run in one task."""
    from beta_dqn.launcher.grid import grid_from_args
    from beta_dqn.reporting.report import write_report

    for name, extra in (("packed", ["--pack-seeds", "2"]), ("solo", [])):
        summary = grid_from_args(grid_args(tmp_path, name, "--runtime", "serial", *extra)).run()
        assert summary["done"] == 3
        write_report(tmp_path / name)
    packed = json.loads((tmp_path / "packed" / "grid_summary.json").read_text())
    tasks = {row["name"]: row["task"]["pack"] for row in packed["runs"]}
    assert tasks == {"MinAtar-Breakout_beta_dqn_s0": ["MinAtar-Breakout_beta_dqn_s0", "MinAtar-Breakout_beta_dqn_s1"],
                     "MinAtar-Breakout_beta_dqn_s1": ["MinAtar-Breakout_beta_dqn_s0", "MinAtar-Breakout_beta_dqn_s1"],
                     "MinAtar-Breakout_beta_dqn_s2": None}
    for seed in (0, 1, 2):
        run = f"MinAtar-Breakout_beta_dqn_s{seed}"
        np.testing.assert_allclose(evals(tmp_path / "packed" / run), evals(tmp_path / "solo" / run), rtol=TOLERANCE)
    # (measured, or read from log lines written on a wall-clock interval: the training score)
    rows = {name: [{k: v for k, v in row.items() if k not in ("wall_seconds", "env_steps_per_s", "train_score")}
                   for row in csv.DictReader(open(tmp_path / name / "report" / "runs.csv"))]
            for name in ("packed", "solo")}
    assert rows["packed"] == rows["solo"] and len(rows["packed"]) == 3
    # on Ray: one task trains the pack, each seed with its own actors
    summary = grid_from_args(grid_args(tmp_path, "ray", "--seeds", "0-1", "--pack-seeds", "2",
                                       "--actor-cpus", "0.25", "--runtime", "ray")).run()
    assert summary["done"] == 2
    for row in summary["runs"]:
        assert row["task"]["pack"] == ["MinAtar-Breakout_beta_dqn_s0", "MinAtar-Breakout_beta_dqn_s1"]
        assert len(row["placement"]["actors"]) == 2


@pytest.mark.integration
def test_a_grid_task_continues_a_pack_from_two_update_counts_skips_finished_seeds_and_outlives_a_divergence(
        ray_cluster, tmp_path, monkeypatch):
    """`beta_dqn.launcher.grid_task._run_unit`, the task a grid runs per pack (in this process): seeds stopped at two
    update
    counts continue as two packs; a second attempt runs no finished seed again; when one seed's loss
    diverges, its partners continue alone and finish, and only the diverging seed fails."""
    from beta_dqn.driver.outputs import NonFiniteLoss
    from beta_dqn.launcher.grid import grid_from_args
    from beta_dqn.launcher.grid_task import _prepare, _run_unit

    grid = grid_from_args(grid_args(tmp_path, "g", "--runtime", "serial", "--env", "CliffWalk", "--algo", "dqn",
                                    "--pack-seeds", "3", "--total-steps", "3000", "--checkpoint-every", "1000"))
    grid.write_spec()
    made = [_prepare(run) for run in grid.runs]
    stop_at_checkpoint(monkeypatch, (1,))
    with pytest.raises(Stop):
        train_pack([cfg for cfg, _, _ in made], made[0][1], [None] * 3)
    monkeypatch.undo()
    dirs = [Path(run["out"]) for run in grid.runs]
    assert [torch.load(d / "checkpoint.pt")["counters"]["env_steps"] for d in dirs] == [2000, 2000, 1000]
    outcomes = _run_unit(grid.runs)
    assert [o["summary"]["env_steps"] for o in outcomes] == [3000, 3000, 3000]
    written = [(d / "summary.json").stat().st_mtime_ns for d in dirs]
    again = _run_unit(grid.runs)
    assert [(d / "summary.json").stat().st_mtime_ns for d in dirs] == written
    assert [o["summary"]["updates"] for o in again] == [o["summary"]["updates"] for o in outcomes]

    # a divergence: seed 1's loss is NaN from its 300th update on, packed or alone
    diverging = tmp_path / "d"
    grid = grid_from_args(grid_args(tmp_path, "d", "--runtime", "serial", "--env", "CliffWalk", "--algo", "dqn",
                                    "--pack-seeds", "3", "--total-steps", "3000", "--checkpoint-every", "1000"))
    grid.write_spec()
    real_check = Checkpointer.check_finite

    def nan_for_seed_1(self, loss, publish_every):
        if self.config["seed"] == 1 and self.learner.updates >= 300:
            raise NonFiniteLoss("the loss became nan")
        real_check(self, loss, publish_every)

    monkeypatch.setattr(Checkpointer, "check_finite", nan_for_seed_1)
    outcomes = _run_unit(grid.runs)
    assert "summary" in outcomes[0] and "summary" in outcomes[2]
    assert outcomes[0]["summary"]["env_steps"] == outcomes[2]["summary"]["env_steps"] == 3000
    assert "NonFiniteLoss: the loss became nan" in outcomes[1]["error"]
    assert not (diverging / "CliffWalk_dqn_s1" / "summary.json").exists()
