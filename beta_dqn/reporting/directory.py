"""Where a report is written (`report_directory`): a directory the report owns whole, an earlier report's (whose
files and figures it replaces), never a run's own or a user's; a refusal or a failure to write is one line."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from beta_dqn.files import OutputDirectory, Unreadable, read_bounded, write_error
from beta_dqn.reporting.figures import FORMATS
from beta_dqn.reporting.records import RECORDS
from beta_dqn.reporting.results import ReportError

REPORT_FILES = ("report.md", "report.json", "study.json", "runs.csv", RECORDS)
FIGURES = ("curves_", "selection_", "basic_", "visits_")  # a figure per environment: <prefix><env>.<format>
# the figures of one name: the performance profile in each format, and an older report's CliffWalk heatmap
NAMED_FIGURES = (*(f"profile.{f}" for f in FORMATS), "cliffwalk_visits.png")
RUN_SIGNS = (".written", ".lock", "config.json", "checkpoint.pt", "summary.json")  # a run's own directory


def report_directory(out: Path) -> OutputDirectory:
    """Where a report is written whole (`beta_dqn.files.OutputDirectory`): `out` absent, empty, or an
    earlier report (its report.md a report's, beside its study.json or report.json), whose entries this report
    replaces (its figures too: none stays stale); a user's other files beside an earlier report are kept and
    named. Never a run's own directory, a user's directory, or anything through a link."""
    if not out.is_symlink() and out.is_dir():
        run = next((name for name in RUN_SIGNS if os.path.lexists(out / name)), None)
        if run is not None:
            raise ReportError(f"--out {out} is a run's directory (it holds {run}): a report is never written into "
                              "one; give --out another directory")

    def owns(name: str) -> bool:
        if name in REPORT_FILES or name in NAMED_FIGURES:
            return True
        return name.rpartition(".")[2] in FORMATS and name.startswith(FIGURES)

    def earlier(path: Path) -> bool:
        try:
            head = read_bounded(path / "report.md", 4096 << 10).split("\n", 1)[0]
        except Unreadable:
            return False
        return head.startswith("# Report: ") and any((path / n).is_file() for n in ("study.json", "report.json"))

    return _Announced(out, owns, earlier)


class _Announced(OutputDirectory):
    """A report's OutputDirectory whose refusals and failures to write are a ReportError (one line), and that
    names, in one line, a user's files it leaves beside the earlier report."""

    def __enter__(self) -> Path:
        try:
            stage = super().__enter__()
        except OutputDirectory.Refused as e:
            raise ReportError(str(e)) from None
        except OSError as e:
            raise ReportError(f"{write_error(self.target, e)}; no report was written") from None
        if self.kept:
            print(f"note: {self.target} holds an earlier report and other files, kept as they are: "
                  f"{', '.join(self.kept[:4])}{' …' if len(self.kept) > 4 else ''}", file=sys.stderr)
        return stage

    def __exit__(self, kind, value, traceback) -> None:
        try:
            super().__exit__(kind, value, traceback)
        except OSError as e:  # a full disk, a read-only file system, as the report is moved in
            raise ReportError(f"{write_error(self.target, e)}; the report is not complete") from None
        if isinstance(value, OSError):  # as the report was written: nothing of it is left
            where = Path(value.filename) if value.filename else self.target
            if self.stage is not None and self.stage in where.parents:
                where = self.target / where.relative_to(self.stage)
            raise ReportError(f"{write_error(where, value)}; no report was written") from None
