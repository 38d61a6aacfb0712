"""SIGTERM as Ctrl-C while a run or a grid runs (`sigterm_interrupts`), and what an interrupt says on its way
out: its line once, `Interrupted` once it was said, an error it led to beside it (`say_beside`). A signal sent to
the process group ends a local Ray cluster too; `local_cluster_gone` says whether it did.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time

_SIGNALLED = threading.Event()  # a SIGTERM arrived (`sigterm_interrupts`)
OWN_SHUTDOWN = threading.Event()  # this process is shutting its local cluster down (`runtime.RayBackend.shutdown`)
CLUSTER_DRAIN_S = 30.0  # how long, after a SIGTERM, a local cluster's GCS or raylet may take to end
OWN_SHUTDOWN_S = 5.0  # how long the watcher lets this process's own shutdown of its cluster finish


def local_cluster_gone(wait: float | None = None) -> bool:
    """Whether this process started a local Ray cluster whose GCS or raylet has ended (a signal to the process
    group reached them too, or they were killed): no Ray call can be answered then. After a SIGTERM they get up
    to 2 s (`wait`) to end (they received it when this process did)."""
    worker = sys.modules.get("ray._private.worker")
    node = getattr(worker, "_global_node", None)
    processes = [info.process for kind in ("gcs_server", "raylet")
                 for info in (getattr(node, "all_processes", None) or {}).get(kind, []) if info.process is not None]
    if not processes:
        return False
    deadline = time.monotonic() + (wait if wait is not None else 2.0 if _SIGNALLED.is_set() else 0.0)
    while True:
        if any(process.poll() is not None for process in processes):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _write_line(text: str) -> None:
    """`text` on stderr on a line of its own: with tqdm's locks (0.5 s at most each: a bar stuck mid-draw does
    not hold it back), a live progress bar is cleared and drawn again below it. Never raises: a closed or
    broken stderr (its reader ended by the same signal) leaves the process to end all the same."""
    from tqdm import tqdm

    try:
        lock, taken = tqdm.get_lock(), []
        try:
            for part in lock.locks:
                if not part.acquire(timeout=0.5):
                    break
                taken.append(part)
            if len(taken) == len(lock.locks):
                tqdm.write(text, file=sys.stderr, nolock=True)
            else:
                sys.stderr.write("\n" + text + "\n")
            sys.stderr.flush()
        finally:
            for part in reversed(taken):
                part.release()
    except Exception:  # noqa: BLE001
        pass


class Interrupted(KeyboardInterrupt):
    """An interrupt (Ctrl-C, SIGTERM) whose line, how to continue, was said already (`sigterm_interrupts`)."""


def interrupt_behind(e: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt that `e` is, or that was being handled as `e` was raised (else None). The interrupt
    is raised wherever the main thread is when the signal arrives; inside CPython's `threading.Condition.wait`
    (under `queue.Queue.get`, `Event.wait`, `Future.result`) it can land after the lock is released and before
    the `try` that takes it back, and the `with` around the wait then raises "RuntimeError: cannot release
    un-acquired lock" with the interrupt as its context: that is still the interrupt. So is an error raised in
    a `finally` or an `except` on the interrupt's way out (said beside it: `say_beside`). The chain is read as a
    traceback shows it: an error raised `from` something else is not the interrupt's."""
    return next((x for x in error_chain(e) if isinstance(x, KeyboardInterrupt)), None)


def error_chain(e: BaseException | None):
    """`e`, then what it was raised from or while handling, as a traceback shows them (`from None` ends it)."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        yield e
        seen.add(id(e))
        e = e.__cause__ or (None if e.__suppress_context__ else e.__context__)


_LOCK_RACE = ("cannot release un-acquired lock", "release unlocked lock")  # CPython's (interrupt_behind)


def say_beside(e: BaseException) -> None:
    """An error an interrupt led to, in a `warning:` line of its own (after the interrupt's): it may be a bug of
    its own, so it is not hidden. Not the interrupt itself, an error of Ray's (what the signal ended too), nor
    CPython's lock race (`interrupt_behind`)."""
    if isinstance(e, KeyboardInterrupt) or type(e).__module__.startswith("ray") or (
            isinstance(e, RuntimeError) and str(e) in _LOCK_RACE):
        return
    _write_line(f"warning: {type(e).__name__}: {(str(e).strip().splitlines() or [''])[0]}")



class _Watch:
    """One `sigterm_interrupts` block: its SIGTERM handler, the watcher thread that hears every signal as it
    arrives (`signal.set_wakeup_fd`), and the line, said once by whoever comes first."""

    def __init__(self, line, when_cluster_gone):
        self.line, self.when_cluster_gone = line, when_cluster_gone
        self.said = threading.Lock()  # taken by whoever says the line: once
        self.said_text = ""
        self.inside = True  # the block's body runs: a SIGTERM interrupts it (not the block's own way out)
        _SIGNALLED.clear()  # (this block's: a process may run several, one after the other)
        OWN_SHUTDOWN.clear()
        from tqdm import tqdm

        tqdm.get_lock()  # (made here, in the main thread: not in the watcher's race with Ray's core)
        self.spoken = threading.Event()
        self.ended = threading.Event()

    def text(self) -> str:
        try:
            return self.line()
        except Exception as e:  # noqa: BLE001 - the interrupt is said all the same
            return f"python -m learner.main: interrupted ({type(e).__name__} finding where to continue)"

    def say(self) -> bool:
        """Say the line unless it was (or is being) said: whether this call said it."""
        if not self.said.acquire(blocking=False):
            return False
        self.said_text = self.text()
        _write_line(self.said_text)
        self.spoken.set()
        return True

    def say_again_if_changed(self) -> None:  # (on the way out: a checkpoint or the summary written since the signal)
        if self.spoken.wait(2.0):  # (the watcher may be saying it this moment)
            now = self.text()
            if now != self.said_text:
                _write_line(now)

    def terminated(self, signum, frame):
        _SIGNALLED.set()
        if self.inside:
            raise KeyboardInterrupt

    def start(self) -> None:
        """The handler and the wakeup pipe installed (the ones they replace kept), the watcher started."""
        self.read, self.write = os.pipe()
        os.set_blocking(self.write, False)
        self.previous = signal.signal(signal.SIGTERM, self.terminated)
        self.previous_fd = signal.set_wakeup_fd(self.write, warn_on_full_buffer=False)
        self.watcher = threading.Thread(target=self.watch, name="sigterm-watch", daemon=True)
        self.watcher.start()

    def cluster_ends(self) -> bool:  # (a SIGTERM to this process alone leaves the cluster up: the block ends first)
        deadline = time.monotonic() + CLUSTER_DRAIN_S
        while not self.ended.is_set() and time.monotonic() < deadline:
            if local_cluster_gone(wait=0.0):
                return True
            time.sleep(0.05)
        return False

    def watch(self):
        try:
            while True:
                got = os.read(self.read, 64)
                if not got:  # the block ended: its write end closed
                    return
                if signal.SIGTERM not in got:
                    continue
                self.say()
                # (a SIGTERM to this process alone: its own shutdown may have ended the cluster, and the block then
                # ends in seconds on its own, writing and releasing what it must)
                if self.cluster_ends():
                    if OWN_SHUTDOWN.is_set() and self.ended.wait(OWN_SHUTDOWN_S):
                        return
                    break
        except OSError:
            return
        finally:
            os.close(self.read)
        try:
            if self.when_cluster_gone is not None:
                self.when_cluster_gone()
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os._exit(130)

    def stop(self) -> None:
        """The handler and the wakeup fd they replaced back, the watcher ended."""
        self.inside = False
        signal.set_wakeup_fd(self.previous_fd)
        # (a handler installed outside Python reads as None: Ray's, gone with Ray's shutdown)
        signal.signal(signal.SIGTERM, signal.SIG_DFL if self.previous is None else self.previous)
        self.ended.set()
        os.close(self.write)  # the watcher reads EOF and ends: waited for, so no thread is left at the process's exit
        self.watcher.join(timeout=5)


@contextlib.contextmanager
def sigterm_interrupts(line, when_cluster_gone=None):
    """While a run or a grid runs (in its process's main thread), `kill PID` (SIGTERM, what `timeout` and job
    schedulers send) stops it as Ctrl-C does: one started in the background by a script (`nohup … &`) ignores
    SIGINT, so Ctrl-C's signal never reaches it. Installed after Ray's start, whose own handler aborts.

    `line()` is what an interrupt says on stderr (how to continue), once: as a SIGTERM arrives, or as a Ctrl-C
    leaves the block (or an error the interrupt raised where it landed: `interrupt_behind`); the interrupt then
    leaves as `Interrupted`. A SIGTERM sent to the process group reaches Ray's processes at the same moment (Ray
    blocks only SIGINT in them): the main thread may then be inside a Ray call that waits a minute for a GCS
    that is gone before Python can raise anything, and Ray's own core may end
    this process first (status 1) when its raylet ends at once. So a watcher thread hears every signal as it
    arrives (`signal.set_wakeup_fd`) and says the line then; if the local cluster's GCS or raylet ends while the
    block lasts (within `CLUSTER_DRAIN_S`: a raylet with workers to stop takes about 10 s), it calls
    `when_cluster_gone()` and ends the process at once (status 130)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    watch = _Watch(line, when_cluster_gone)
    watch.start()
    try:
        yield
    except BaseException as e:
        watch.inside = False
        if isinstance(e, GeneratorExit):
            raise
        if interrupt_behind(e) is not None:  # (or an error on the interrupt's way out, as a run closed: said after)
            first = watch.say()
            say_beside(e)
            if not first:
                watch.say_again_if_changed()
            raise Interrupted from None
        if not watch.said.acquire(blocking=False):  # a SIGTERM said the line: this error is what it led to (an
            say_beside(e)  # actor it ended too), the interrupt
            watch.say_again_if_changed()
            raise Interrupted from e
        raise  # (and no line after it: the lock is taken)
    else:
        watch.inside = False
        if not watch.said.acquire(blocking=False):  # a SIGTERM as the body ended, said already: as the line said
            watch.say_again_if_changed()
            raise Interrupted
    finally:
        watch.stop()


STALL_SECONDS = 600.0  # no env step, update or evaluation for this long: the run says so, once a stall


def watch_stalls(progress, stall: float, wait, clock=time.monotonic, say=None) -> None:
    """Reads `progress()` (a tuple of counters) each time `wait(seconds)` returns False (a quarter of `stall`, at
    most 30 s) until it returns True; where none has moved for `stall` seconds of `clock`, one warning line (`say`,
    else stderr), once a stall."""
    last, since, said = progress(), clock(), False
    while not wait(min(stall / 4, 30.0)):
        now = progress()
        if now != last:
            last, since, said = now, clock(), False
        elif not said and clock() - since >= stall:
            said = True
            line = (f"warning: no env step, update or evaluation for {stall / 60:.3g} minutes (env step {now[0]:,}); "
                    "the run goes on (an environment whose episode never ends, or an actor that hangs, looks like "
                    "this)")
            if say is None:
                print(line, file=sys.stderr, flush=True)
            else:
                say(line)


@contextlib.contextmanager
def stall_watch(progress, stall: float | None = None):
    """While the block (a run's loop) runs, `watch_stalls` in a thread of its own: an environment whose episode
    never ends, or an actor that hangs, is said in one line, and the run goes on. (Packed seeds' loop, the actors'
    start and the last evaluation are not watched.)"""
    stall = STALL_SECONDS if stall is None else stall
    stop = threading.Event()
    thread = threading.Thread(target=watch_stalls, args=(progress, stall, stop.wait), name="stall-watch",
                              daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
