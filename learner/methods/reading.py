"""How the networks read an environment's observations (`Reading`), chosen from its observation space
(`choose`): the one place that says which network each kind of observation gets (docs/running.md#observations).

- Flat observations (rank 1, or any rank but 3): the MLP, Linear(·,128) → ReLU → Linear(128,n).
- Rank 3 (an image, or a grid of codes as MinAtar's and MiniGrid's): a convolutional torso, then Linear(·,hidden)
  → ReLU → Linear(hidden,n). Its axes are height × width × channels (HWC) or channels × height × width (CHW, a
  frame stack's): `--obs-layout`, or by default the smaller of the first and last axes is the channels (HWC where
  they are equal). Its torso is the paper's small one, Conv(16, 3×3, stride 1) and 128 hidden units (spec §5), or
  Nature-DQN's (Mnih et al. 2015): Conv(32, 8×8, stride 4) → Conv(64, 4×4, stride 2) → Conv(64, 3×3, stride 1)
  and 512 hidden units: `--network`, or by default Nature-DQN's for pixels at least `NATURE_FROM` high and wide
  (the paper's environments are grids of codes, and keep the small one).
- Pixels are scaled by 1/255 to [0, 1] inside the network (the replay keeps the bytes): `--pixels`, or by default a
  uint8 rank-3 space whose bounds are 0 and 255. A space with tighter bounds (codes, as MiniGrid's) is read
  unscaled.

Torch-free: the actors' numpy forward (`learner.methods.numpy_net`) reads the same description as the learner's
torch networks (`learner.methods.networks`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LAYOUTS = ("auto", "hwc", "chw")
NETWORKS = ("auto", "small", "nature")
PIXELS = ("auto", "true", "false")
NATURE_FROM = 36  # pixel frames at least this high and wide get Nature-DQN's torso by default (its smallest input)
WARN_PARAMETERS = 5_000_000  # a network with more parameters than this is said at the run's start
# each torso's convolutions: (parameter name, output channels, kernel, stride), in order
TORSOS = {"small": (("conv", 16, 3, 1),),
          "nature": (("conv1", 32, 8, 4), ("conv2", 64, 4, 2), ("conv3", 64, 3, 1))}
HIDDEN = {"mlp": 128, "small": 128, "nature": 512}
NAMES = {"mlp": "MLP (128 hidden units)", "small": "the paper's small conv net (16 3×3 filters, 128 hidden units)",
         "nature": "Nature-DQN (3 conv layers, 512 hidden units)"}


class ReadingError(ValueError):
    """An observation space the networks cannot read as asked; its text is one line naming the flag."""


class ReadingMismatch(ValueError):
    """A method's acting network reads observations otherwise than the actors will (`learner.learner.make_modules`
    checks); its text is one line."""


def torso(params) -> str:
    """The torso a network's parameters (or a state dict's keys) have: "small" (`conv`), "nature" (`conv1`), or
    "mlp" (neither)."""
    return next((name for name, layers in TORSOS.items() if f"{layers[0][0]}.weight" in params), "mlp")


@dataclass(frozen=True)
class Reading:
    """How the networks read an observation: `network` "mlp", "small" or "nature"; for a conv torso its axes'
    `layout` ("HWC" or "CHW") and whether it is uint8 `pixels` (scaled by 1/255); `why`: how the layout was
    chosen, for the run's summary."""

    network: str = "mlp"
    layout: str = ""
    pixels: bool = False
    why: str = ""

    @property
    def scale(self) -> float:
        return 1.0 / 255.0 if self.pixels else 1.0

    def unscaled(self) -> Reading:
        """This reading of inputs already scaled (RND's normalised observations)."""
        return Reading(self.network, self.layout, False, self.why)

    def frame(self, shape: tuple[int, ...]) -> tuple[int, int, int]:
        """(height, width, channels) of a rank-3 observation of `shape`."""
        if self.layout == "CHW":
            return shape[1], shape[2], shape[0]
        return shape[0], shape[1], shape[2]

    def describe(self, shape: tuple[int, ...], dtype: str) -> str:
        """One line for the run's summary: the observation, how it is read and by which network."""
        text = f"{'×'.join(map(str, shape))} {dtype}"
        if self.network == "mlp":
            return f"{text}, flat; network: {NAMES['mlp']}"
        kind = "pixels scaled to [0, 1]" if self.pixels else "values as they are"
        return f"{text}, {self.layout} ({self.why}), {kind}; network: {NAMES[self.network]}"

    def summary(self) -> dict:
        return {"network": self.network, "layout": self.layout, "pixels": self.pixels, "layout_chosen": self.why}


def default(shape: tuple[int, ...]) -> Reading:
    """The reading of a shape with every choice at its default and no pixels: the paper's environments'."""
    return Reading("small", "HWC", False, "the default") if len(shape) == 3 else Reading()


def conv_output(size: int, network: str) -> int:
    """A side of `size` after `network`'s convolutions (no padding)."""
    for _, _, kernel, stride in TORSOS[network]:
        size = (size - kernel) // stride + 1
    return size


def choose(shape: tuple[int, ...], dtype, low, high, layout: str = "auto", network: str = "auto",
           pixels: str = "auto") -> Reading:
    """The reading of an observation space (`shape`, `dtype`, its bounds `low` and `high`) given `--obs-layout`,
    `--network` and `--pixels`; a choice the space cannot take is a `ReadingError`."""
    for flag, value, allowed in (("--obs-layout", layout, LAYOUTS), ("--network", network, NETWORKS),
                                 ("--pixels", pixels, PIXELS)):
        if value not in allowed:
            raise ReadingError(f"{flag} {value!r}: give one of {', '.join(allowed)}")
    if len(shape) != 3:
        for flag, value in (("--obs-layout", layout), ("--network", network), ("--pixels", pixels)):
            if value != "auto":
                raise ReadingError(f"{flag} {value}: the observations are of shape {shape}, not an image (rank 3: "
                                   "H×W×C or C×H×W); flat observations get the MLP")
        return Reading()
    if layout == "auto":
        chw = shape[0] < shape[2]
        why = (f"auto: the {'first' if chw else 'last'} axis, {shape[0] if chw else shape[2]}, is the smaller end "
               "and holds the channels" if shape[0] != shape[2] else "auto: the ends are equal; channels last")
    else:
        chw, why = layout == "chw", f"--obs-layout {layout}"
    if pixels == "auto":
        scaled = bool(np.dtype(dtype) == np.uint8 and np.all(np.asarray(low) == 0) and np.all(np.asarray(high) == 255))
    elif pixels == "true" and np.dtype(dtype) != np.uint8:
        raise ReadingError(f"--pixels true: the observations are {np.dtype(dtype).name}, not uint8 (0-255)")
    else:
        scaled = pixels == "true"
    reading = Reading("small", "CHW" if chw else "HWC", scaled, why)
    h, w, _ = reading.frame(shape)
    if network == "auto":  # (a grid of codes keeps the paper's net however large: a stride-4 conv skips cells)
        network = "nature" if scaled and min(h, w) >= NATURE_FROM else "small"
    smallest = 3 if network == "small" else NATURE_FROM
    if min(h, w) < smallest:
        raise ReadingError(f"--network {network}: its convolutions need frames at least {smallest}×{smallest}; read "
                           f"as {reading.layout}, the observations are {h}×{w} (--obs-layout, --network small)")
    return Reading(network, reading.layout, scaled, why)


def parameters(shape: tuple[int, ...], reading: Reading, n_out: int, heads: int = 0) -> int:
    """How many parameters a network of `reading` has for observations of `shape` and `n_out` outputs (`heads`
    > 0: Bootstrapped DQN's K heads over one torso), without building it."""
    hidden = HIDDEN[reading.network]
    if reading.network == "mlp":
        features, torso = int(np.prod(shape)), 0
    else:
        h, w, c = reading.frame(shape)
        torso = 0
        for _, out, kernel, _ in TORSOS[reading.network]:
            torso += out * (c * kernel * kernel + 1)
            c = out
        features = c * conv_output(h, reading.network) * conv_output(w, reading.network)
    k = max(heads, 1)
    return torso + k * (features * hidden + hidden + hidden * n_out + n_out)


def size_warning(shape: tuple[int, ...], reading: Reading, n_out: int) -> str | None:
    """One line where a Q network of `reading` for observations of `shape` would have more than `WARN_PARAMETERS`
    parameters (slow to update, heavy to publish), naming what would make it smaller; else None."""
    n = parameters(shape, reading, n_out)
    if n <= WARN_PARAMETERS:
        return None
    text = f"warning: the Q network has {n:,} parameters (more than {WARN_PARAMETERS:,}), {NAMES[reading.network]}"
    if reading.network == "small" and min(reading.frame(shape)[:2]) >= NATURE_FROM:
        h, w, _ = reading.frame(shape)
        nature = parameters(shape, Reading("nature", reading.layout, reading.pixels), n_out)
        return f"{text}: --network nature reads these {h}×{w} frames with {nature:,}"
    if len(shape) == 4:  # RGB frames stacked: (stack, H, W, 3)
        return (f"{text} over {int(np.prod(shape)):,} inputs, a stack of {shape[0]} frames read flat: "
                "gymnasium.wrappers.GrayscaleObservation before FrameStackObservation gives a stack of grey frames "
                "(stack×H×W), read by the conv net (--wrappers)")
    return (f"{text} over {int(np.prod(shape)):,} inputs: a wrapper that makes the observation smaller (--wrappers, "
            "e.g. gymnasium.wrappers.ResizeObservation) would shrink it")
