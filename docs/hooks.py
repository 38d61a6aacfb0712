"""MkDocs hook: the committed results (figures, reports, the study's plan) become part of the site.

`results/` lives at the repository's root, outside `docs/`. Rather than keep a second copy of every figure
in `docs/`, this hook adds each `results/**/*.png` and `results/**/*.md` to the site's files under the
same path, so a page links to `results/minatar/curves_MinAtar-Breakout.png` or
`results/table1/report.md` and the link is checked by `mkdocs build --strict` like any other.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = (".png", ".md")


def on_files(files, config):
    results = ROOT / "results"
    for path in sorted(results.rglob("*")):
        if path.suffix not in SUFFIXES or not path.is_file():
            continue
        relative = path.relative_to(ROOT).as_posix()
        if "/runs/" in f"/{relative}":  # a record's copies of its runs: data, not pages
            continue
        files.append(File(relative, src_dir=str(ROOT), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files
