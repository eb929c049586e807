"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks:``).

* ``on_files``: adds the reference pages generated from the code (:mod:`edgebench.docgen`: the
  CLI from the argparse parser, the solver catalogue from the registry, the JSON Schemas).
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

ROOT = Path(__file__).resolve().parents[1]
_LINK = re.compile(r"\[([^\]]*)\]\((\.\./[^)#\s]+)[^)]*\)")


def on_files(files, config):
    for rel, text in docgen.generate().items():
        files.append(File.generated(config, rel, content=text))
    return files


def on_page_markdown(markdown, page, config, files):
    page_dir = (Path(config["docs_dir"]) / page.file.src_uri).parent
    docs = Path(config["docs_dir"]).resolve()

    def fix(m: re.Match) -> str:
        target = (page_dir / m.group(2)).resolve()
        if docs in target.parents or not target.exists() or ROOT not in target.parents:
            return m.group(0)
        rel = target.relative_to(ROOT).as_posix()
        return f"{m.group(1)} (`{rel}`)"

    return _LINK.sub(fix, markdown)
