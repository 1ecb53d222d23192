"""Every relative link of README.md and docs/ resolves, as GitHub renders them: the file exists
(in the repository, not only on this disk) and its #anchor is one of the target's headings."""

from __future__ import annotations

import re
import subprocess
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# a code span may wrap a line but not cross a paragraph (a blank line)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1)(?!\n[ \t]*\n).)+?\1", re.DOTALL)
# [text](target "title") and ![alt](target); the text may hold one level of brackets.
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"  # [text]
    r"\(\s*<?([^\s()<>]*)>?(?:\s+\"[^\"]*\")?\s*\)"  # (target "title")
)
REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
HTML_LINK = re.compile(r"""\b(?:href|src)=["']([^"']+)["']""")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def outside_code_blocks(text: str) -> list[str]:
    """The lines of a markdown text that are not inside a fenced code block (blank in their
    place, so that line numbers stay)."""
    lines, fence = [], ""
    for line in text.splitlines():
        opening = FENCE.match(line)
        if fence:
            if opening and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = ""
            lines.append("")
        elif opening:
            fence = opening.group(1)
            lines.append("")
        else:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its rendered text lower-cased, every character that is
    not a letter, mark, digit, `_`, `-` or space dropped, each space a `-`."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)  # links: text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("`", "").replace("*", "").strip().lower()
    kept = (
        c
        for c in text
        if c in " -" or unicodedata.category(c)[0] in "LMN" or unicodedata.category(c) == "Pc"
    )
    return "".join(kept).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every anchor of a markdown file: one per heading, a repeated one suffixed -1, -2, ..."""
    seen: dict[str, int] = {}
    found = set()
    for line in outside_code_blocks(path.read_text()):
        heading = ATX_HEADING.match(line)
        if not heading:
            continue
        base = slug(heading.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    found.update(re.findall(r"""<a\s+(?:name|id)=["']([^"']+)["']""", path.read_text()))
    return found


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of every link of a markdown file outside code blocks and code spans."""
    lines = outside_code_blocks(path.read_text())
    text = CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), "\n".join(lines))
    found = []
    for pattern in (INLINE_LINK, REFERENCE_DEF, HTML_LINK):
        for match in pattern.finditer(text):
            found.append((text.count("\n", 0, match.start()) + 1, match.group(1)))
    return sorted(found)


def tracked_files(root: Path) -> set[Path] | None:
    """The files git tracks (what a clone and GitHub show), or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return {root / name for name in out.decode().split("\0") if name}


def broken_links(path: Path, root: Path, tracked: set[Path] | None) -> list[str]:
    """One sentence per link of `path` that does not resolve."""
    problems = []
    for line, target in links(path):
        where = f"{path.relative_to(root)}:{line}: {target}"
        if not target or SCHEME.match(target) or target.startswith("//"):
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            problems.append(f"{where}: no such file")
            continue
        if tracked is not None and dest.is_file() and dest not in tracked:
            problems.append(f"{where}: not in git (a clone and GitHub lack it)")
            continue
        if tracked is not None and dest.is_dir() and not any(dest in f.parents for f in tracked):
            problems.append(f"{where}: no file of this folder is in git")
            continue
        if anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            problems.append(f"{where}: no heading gives #{anchor}")
    return problems


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


@pytest.mark.parametrize("doc", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(doc: Path) -> None:
    assert broken_links(doc, ROOT, tracked_files(ROOT)) == []


def test_the_documents_do_link() -> None:
    # the check above passes vacuously if the link pattern stops matching: it must find the
    # README's links to docs/ and at least one anchor
    found = [target for doc in documents() for _, target in links(doc)]
    assert sum(t.startswith("docs/") for t in found) >= 10
    assert any("#" in t and not SCHEME.match(t) for t in found)


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        # as GitHub renders them (facts of its slugger, seen on rendered pages)
        ("Safety model", "safety-model"),
        (
            "Exit codes (stable; runbooks branch on them)",
            "exit-codes-stable-runbooks-branch-on-them",
        ),
        (
            "The analysis alone: `--from-file` of a zone outage (issue 19)",
            "the-analysis-alone---from-file-of-a-zone-outage-issue-19",
        ),
        (
            "What a scenario is (tests/audit/scenarios.py)",
            "what-a-scenario-is-testsauditscenariospy",
        ),
        ("Measured: 200 failed nodes of one zone", "measured-200-failed-nodes-of-one-zone"),
        ("`remediate --confirm` — the run", "remediate---confirm--the-run"),
        ("A [linked](x.md) *word* and snake_case", "a-linked-word-and-snake_case"),
    ],
)
def test_slug_as_github_renders(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# Title\n\n## Same\n\n## Same\n")
    (tmp_path / "README.md").write_text(
        "see [a](docs/a.md), [b](docs/b.md), [c](docs/a.md#title), [d](docs/a.md#same-1),\n"
        "[e](docs/a.md#same-2), [f](#nowhere), ![g](docs/img.svg), [h](https://x.invalid/y),\n"
        "`[code](docs/nope.md)`\n\n```\n[fenced](docs/nope.md)\n```\n\n# Here\n[i](#here)\n"
        "[j]: docs/gone.md\n"
    )
    assert broken_links(tmp_path / "README.md", tmp_path, None) == [
        "README.md:1: docs/b.md: no such file",
        "README.md:2: #nowhere: no heading gives #nowhere",
        "README.md:2: docs/a.md#same-2: no heading gives #same-2",
        "README.md:2: docs/img.svg: no such file",
        "README.md:11: docs/gone.md: no such file",
    ]


def test_an_untracked_target_is_found(tmp_path: Path) -> None:
    (tmp_path / "kept.md").write_text("# Kept\n")
    (tmp_path / "local.md").write_text("# Local\n")
    (tmp_path / "README.md").write_text("[k](kept.md) [l](local.md)\n")
    tracked = {tmp_path / "README.md", tmp_path / "kept.md"}
    assert broken_links(tmp_path / "README.md", tmp_path, tracked) == [
        "README.md:1: local.md: not in git (a clone and GitHub lack it)"
    ]
