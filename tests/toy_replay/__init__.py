"""A replay backend defined outside `replay_service/`, for `tests/test_replay_folder.py`: `--replay toy` keeps a
run's transitions as the chunks the actors sent, in one store hosted by the run's runtime (a Ray actor, or an object
in a serial run's process), and samples uniformly over them. It checks its value (one shard only), says that a
stopped run of it cannot continue (it keeps nothing on disk), and writes what it stored and served to
`toy_replay.json` in the run directory as the run ends. It has a flag of its own (`--toy-seed-offset`, checked by
its own rule). It is registered only where `BETA_DQN_REPLAYS` names this module: nothing of the project names it."""

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from replay_service.backends import register
from replay_service.contract import BackendError, ReplayBackend
from replay_service.flags import flag, non_negative


@dataclass(frozen=True)
class ToyFlags:
    toy_seed_offset: int = flag(0, "added to the run's seed for the toy store's sampling")

    def check(self) -> None:
        non_negative(self, "toy_seed_offset")


class ToyStore:
    """The chunks as they came, the oldest dropped past `capacity` transitions."""

    def __init__(self, capacity: int, seed: int):
        self.capacity, self.chunks, self.held, self.inserted = capacity, [], 0, 0
        self.rng = np.random.default_rng(seed)

    def insert(self, chunk: dict) -> int:
        n = len(chunk["action"])  # (the chunk's per-transition columns; it carries other fields too)
        self.chunks.append({k: np.array(v) for k, v in chunk.items() if np.ndim(v) and len(v) == n})
        self.held, self.inserted = self.held + n, self.inserted + n
        while self.held - len(self.chunks[0]["action"]) >= self.capacity:
            self.held -= len(self.chunks.pop(0)["action"])
        return self.inserted

    def sample(self, batch_size: int) -> dict:
        whole = {k: np.concatenate([c[k] for c in self.chunks]) for k in self.chunks[0]}
        idx = self.rng.integers(0, len(whole["action"]), size=batch_size)
        return {k: v[idx] for k, v in whole.items()}

    def stats(self) -> dict:
        return {"size": self.held, "inserted": self.inserted, "capacity": self.capacity}


class ToySampler:
    def __init__(self, backend, store, batch_size: int, out: Path):
        self.backend, self.store, self.batch_size, self.out = backend, store, batch_size, out
        self.ports, self.batches, self.harvested = [backend.port(store)], 0, 0
        self.last = {"inserted": 0}  # the store's stats as last asked (on Ray it is gone when the sampler closes)

    def added(self, shard: int, steps: int) -> None:
        self.harvested += steps

    def next_batch(self) -> dict:
        self.batches += 1
        return self.backend.get(self.backend.call(self.store, "sample", self.batch_size))

    def stats(self) -> list[dict]:
        self.last = self.backend.get(self.backend.call(self.store, "stats"))
        return [self.last]

    def rejected(self):
        return None

    def locations(self) -> list[str]:
        return []

    def snapshot_files(self, env_steps: int) -> list[str]:
        return []

    def state_dict(self, out: Path, env_steps: int) -> dict:
        return {}

    def checkpoint_written(self, out: Path, state: dict) -> list[str]:
        return []

    def load_state_dict(self, state: dict, out: Path) -> None:
        raise AssertionError("a toy replay is never continued (ToyBackend.cannot_resume)")

    def close(self, started: bool = True) -> None:
        if started:  # (the run asked for its stats as it finished: its summary's)
            (self.out / "toy_replay.json").write_text(json.dumps({"stored": self.last["inserted"],
                                                                  "harvested": self.harvested,
                                                                  "batches": self.batches}))


class ToyBackend(ReplayBackend):
    flags = ToyFlags
    names = ("toy",)
    shown = ("toy",)
    entries = ("toy_replay.json",)

    def check(self, cfg) -> None:
        if cfg.replay_shards != 1:
            raise BackendError("replay_shards", f"the toy replay has one shard, got {cfg.replay_shards}")

    def cannot_resume(self, config: dict) -> str:
        return "its toy replay keeps nothing on disk"

    def run_dir_entries(self, cfg) -> tuple[str, ...]:
        return ("toy_replay.json",)

    def open(self, cfg, spec, backend, out: Path, resume, extras: tuple):
        store = backend.make(ToyStore, cfg.replay_capacity, cfg.seed + cfg.flags(ToyFlags).toy_seed_offset,
                             ported=True)
        return ToySampler(backend, store, cfg.batch_size, Path(out))


register("toy", ToyBackend())
