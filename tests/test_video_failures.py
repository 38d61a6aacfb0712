"""`evaluate(video_dir=...)` and `learner.evaluate --video` where a video cannot be made (issue: 19–122-line
tracebacks, a 0-byte video left on a full disk, SDL's "XDG_RUNTIME_DIR is invalid" on every video): one line
naming the directory and the cause, nothing half-written kept, and no SDL line."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from beta_dqn import load, train

ROOT = Path(__file__).resolve().parents[1]
TINY = {"env": "CartPole-v1", "algo": "dqn", "total_steps": 1000, "learning_starts": 200, "actors": 1,
        "runtime": "serial", "eval_every": 1000, "eval_episodes": 2, "wandb": "disabled", "progress": False}
pytest.importorskip("moviepy")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return train(**TINY, out=str(tmp_path_factory.mktemp("video") / "run")).run_dir


def test_a_link_or_a_path_under_a_file_is_one_line_and_nothing_is_written(run_dir, tmp_path):
    agent = load(run_dir)
    target = tmp_path / "elsewhere"
    (tmp_path / "dangling").symlink_to(target)
    with pytest.raises(ValueError, match="is a symbolic link; give a directory of its own"):
        agent.evaluate(episodes=1, video_dir=tmp_path / "dangling")
    assert not target.exists()
    (tmp_path / "a-file").write_text("mine\n")
    with pytest.raises(ValueError, match=r"^video_dir: cannot write .*a-file/videos \(Not a directory\)$"):
        agent.evaluate(episodes=1, video_dir=tmp_path / "a-file" / "videos")
    assert (tmp_path / "a-file").read_text() == "mine\n"


def test_a_failing_writer_leaves_no_video_and_says_so_in_one_line(run_dir, tmp_path, monkeypatch):
    """The writer fails after the first episode's video (as a disk that fills does): every video of the call goes,
    and the directory it made."""
    import moviepy

    calls = []
    real = moviepy.ImageSequenceClip.write_videofile

    def fails_second(self, filename, *args, **kwargs):
        calls.append(filename)
        if len(calls) == 2:
            Path(filename).write_bytes(b"")  # what a full disk leaves: a name, no video
            raise OSError(28, "No space left on device")
        return real(self, filename, *args, **kwargs)

    monkeypatch.setattr(moviepy.ImageSequenceClip, "write_videofile", fails_second)
    videos = tmp_path / "videos"
    with pytest.raises(ValueError, match=r"could not be made \(cannot write .*videos \(No space left on device\)\)"):
        load(run_dir).evaluate(episodes=3, video_dir=videos)
    assert len(calls) >= 2 and not videos.exists()  # (closing tries the failed one again)


def test_the_command_says_a_full_disk_in_one_line_and_no_sdl_line(run_dir, tmp_path):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and mount namespaces (unshare -m)")
    disk = tmp_path / "disk"
    disk.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "SDL_VIDEODRIVER")}
    script = (f'mount -t tmpfs -o size=8k tmpfs {disk} && "$PY" -m learner.evaluate {run_dir} --episodes 5 '
              f'--video {disk / "v"}; echo "status=$?" >&2; ls -A {disk / "v"} >&2 2>&1 || true; '
              f'"$PY" -m learner.evaluate {run_dir} --episodes 1 --video {tmp_path / "ok"}; echo "ok=$?" >&2')
    done = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={**env, "PY": sys.executable})
    if "status=" not in done.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr[-300:]}")
    lines = done.stderr.strip().splitlines()
    said = [line for line in lines if line.startswith("python -m learner.evaluate")]
    assert "status=2" in lines and len(said) == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert said[0].startswith("python -m learner.evaluate: error: video_dir: the videos could not be made (")
    assert any("No such file or directory" in line for line in lines), lines  # the directory went with them
    assert "ok=0" in lines and not any("XDG_RUNTIME_DIR" in line for line in lines), lines
    assert list((tmp_path / "ok").glob("*.mp4"))
