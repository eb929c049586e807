"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks:``).

* ``on_files``: adds the reference pages generated from the code (:mod:`edgebench.docgen`: the
  CLI from the argparse parser, the solver catalogue from the registry, the JSON Schemas).
* ``on_files`` also renders the results page from the newest export under ``results/``
  (:mod:`edgebench.runner.results_page`): its performance-profile images become generated files
  under ``img/results/``, its text replaces the ``<!-- results -->`` marker of ``docs/results.md``
  (in ``on_page_markdown``), and ``js/sortable.js`` — the report's table-sorting script, taken
  from the report page (:func:`edgebench.runner.page.page`) so there is one copy of it — makes
  the ``table.sortable`` tables sortable (``extra_javascript`` in mkdocs.yml), styled by
  ``css/sortable.css`` (``extra_css``: Material styles only tables without a class).
* ``on_page_markdown``: a relative link that leaves ``docs/`` (``../edgebench/runner/store.py``)
  points at a file of the repository, not of the site (the project has no public repository URL
  yet): when the file exists the link becomes its text followed by the repository path in code
  (``greedy_policy.py (`examples/greedy_policy.py`)``); a path that does not exist is left alone,
  so that the strict build reports it as a broken link.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

from edgebench import docgen
from edgebench.runner import page as report_page
from edgebench.runner import results_page

ROOT = Path(__file__).resolve().parents[1]
_LINK = re.compile(r"\[([^\]]*)\]\((\.\./[^)#\s]+)[^)]*\)")
RESULTS_PAGE = "results.md"
RESULTS_MARKER = "<!-- results -->"
_RESULTS: dict[str, str] = {}


#: Material styles only tables without a class; the sortable ones get the same look here
SORTABLE_CSS = """.md-typeset table.sortable{display:block;max-width:100%;overflow:auto;font-size:.62rem;
border:.05rem solid var(--md-typeset-table-color);border-radius:.1rem;border-spacing:0;margin:1em 0}
.md-typeset table.sortable th{font-weight:700;padding:.6em .8em;text-align:left;vertical-align:top;
cursor:pointer;user-select:none;background:var(--md-default-fg-color--lightest)}
.md-typeset table.sortable th::after{content:" \\2195";color:var(--md-default-fg-color--light)}
.md-typeset table.sortable th.asc::after{content:" \\2191"}.md-typeset table.sortable th.desc::after{content:" \\2193"}
.md-typeset table.sortable td{border-top:.05rem solid var(--md-typeset-table-color);padding:.5em .8em;
vertical-align:top}
"""


def sort_script() -> str:
    """The report's table-sorting script, from the report page itself (one copy of it)."""
    return report_page.page([], "").split("<script>", 1)[1].rsplit("</script>", 1)[0]


def results_markdown(config) -> tuple[str, dict[str, bytes]]:
    """The results page's generated text and images, from the newest ``results/*/`` export."""
    folder = results_page.newest_export(ROOT / "results")
    if folder is None:
        return "No results export yet (`edgebench results export`, then rebuild the site).\n", {}
    return results_page.render(folder)


def on_files(files, config):
    for rel, text in docgen.generate().items():
        files.append(File.generated(config, rel, content=text))
    text, images = results_markdown(config)
    _RESULTS["text"] = text
    for rel, data in images.items():
        files.append(File.generated(config, rel, content=data))
    files.append(File.generated(config, "js/sortable.js", content=sort_script()))
    files.append(File.generated(config, "css/sortable.css", content=SORTABLE_CSS))
    return files


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == RESULTS_PAGE and RESULTS_MARKER in markdown:
        markdown = markdown.replace(RESULTS_MARKER, _RESULTS.get("text", ""))
    page_dir = (Path(config["docs_dir"]) / page.file.src_uri).parent
    docs = Path(config["docs_dir"]).resolve()

    def fix(m: re.Match) -> str:
        target = (page_dir / m.group(2)).resolve()
        if docs in target.parents or not target.exists() or ROOT not in target.parents:
            return m.group(0)
        rel = target.relative_to(ROOT).as_posix()
        return f"{m.group(1)} (`{rel}`)"

    return _LINK.sub(fix, markdown)
