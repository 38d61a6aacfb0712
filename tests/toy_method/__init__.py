"""A method defined outside `learner/methods/`, for `tests/test_method_folder.py`: DQN's learning and ε-greedy acting,
with a flag of its own (`--toy-period`) and a per-step extra (`toy_phase`: the step's index under its episode's
arm, modulo the period) stored in the replay, and a learning metric that reads it back from the batch. It is
registered only where `BETA_DQN_METHODS` names this module: nothing of the project names it."""

from learner.methods import Method, register
from tests.toy_method.acting import PhaseActing
from tests.toy_method.flags import Flags

register("toy", Method("tests.toy_method", PhaseActing, "Toy", Flags, epsilon=True))
