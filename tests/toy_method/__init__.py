"""A method defined outside `methods/`, for `tests/test_method_folder.py`: DQN's learning and ε-greedy acting
with a per-step extra of its own (the parity of the step within its episode's arm) stored in the replay, and a
learning metric that reads it back from the batch. It is registered only where `BETA_DQN_METHODS` names this
module: nothing of the project names it."""

from methods import Method, register
from tests.toy_method.acting import ParityActing

register("toy_parity", Method("tests.toy_method", ParityActing, "Toy (parity)"))
