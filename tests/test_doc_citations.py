"""Every section the code and the docs cite exists.

The suite's texts point readers to sections by name — ``docs/formulations/placement-search.md,
"Exact-history LNS"`` in a docstring, ``(placement.md, "Time limits")`` in a page — and pages
get split and sections renamed (the placement reference lost its history to its own page in
session 44). mkdocs checks links and anchors; nothing checked these. A citation is a ``.md``
path followed by a quoted name (``path, "Name"``, ``path ("Name")``, ``path: "Name"``); it
resolves when the name (case, backticks and line breaks aside) occurs in one of the cited
file's headings or in a bold or italic lead at the start of one of its lines — the docs name
paragraphs that way too. A path that is not a file of the repository is not a citation.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIP = {".git", ".venv", "site", "node_modules", "runs", "build", "dist", "__pycache__", ".pytest_cache"}
SUFFIXES = {".py", ".md", ".toml", ".sh"}
#: a .md path, then a separator (",", ";", ":", a closing parenthesis or white space), then "Name"
CITE = re.compile(r'((?:docs/)?[\w./-]+\.md)(?:\)?[,;:]?\s+|\)?[,;:])\(?(?:section\s+)?'
                  r'"([^"\n]{2,120}(?:\n[^"\n]{0,120}){0,2})"')
HEADING = re.compile(r"#{1,6}\s+(.*)")
LEAD = re.compile(r"\s*(?:[-*]\s+|\d+\.\s+)?(\*\*?|_)([^*_]{3,300}?)(?:\1|$)")


def norm(text: str) -> str:
    """Lower case, no backticks, no comment markers at line starts, white space collapsed."""
    text = re.sub(r"(?m)^\s*#:?", " ", text).replace("`", "")
    return re.sub(r"\s+", " ", text).strip().lower()


def anchors(path: Path) -> list[str]:
    """The names a reader can find in a page: headings and bold or italic line leads."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for pattern, group in ((HEADING, 1), (LEAD, 2)):
            m = pattern.match(line)
            if m:
                out.append(norm(m.group(group)))
    return out


def resolve(ref: str, citing: Path, root: Path) -> Path | None:
    for candidate in (root / ref, root / "docs" / ref, citing.parent / ref):
        if candidate.is_file():
            return candidate
    hits = [p for p in (root / "docs").rglob(Path(ref).name) if p.is_file()] if (root / "docs").is_dir() else []
    return hits[0] if len(hits) == 1 else None


def texts(root: Path):
    for path in root.rglob("*"):
        if path.suffix in SUFFIXES and path.is_file() and not SKIP.intersection(path.relative_to(root).parts):
            yield path


def unresolved(root: Path) -> tuple[int, list[str]]:
    """(citations found, one line per citation whose name the cited file lacks)."""
    cache: dict[Path, list[str]] = {}
    count, bad = 0, []
    for path in texts(root):
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in CITE.finditer(text):
            target = resolve(m.group(1), path, root)
            if target is None:
                continue
            count += 1
            name = norm(m.group(2))
            names = cache.setdefault(target, anchors(target))
            if not any(name in a for a in names):
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f'{path.relative_to(root)}:{line}: {target.relative_to(root)} has no section "{name}"')
    return count, bad


def test_every_cited_section_exists():
    count, bad = unresolved(ROOT)
    assert count > 100, f"only {count} citations found: the pattern no longer reads the texts"
    assert not bad, "cited sections that do not exist:\n" + "\n".join(bad)


def test_the_check_finds_a_missing_section(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text("# Page\n\n## The model (`x`)\n\n**Costs.** text\n", encoding="utf-8")
    (tmp_path / "code.py").write_text('"""See docs/page.md, "The model", docs/page.md ("costs"),\n'
                                      'docs/page.md, "The\nmissing one" and other.md, "Nothing"."""\n',
                                      encoding="utf-8")
    count, bad = unresolved(tmp_path)
    assert count == 3  # other.md is not a file: not a citation
    assert bad == ['code.py:2: docs/page.md has no section "the missing one"']
