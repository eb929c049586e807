"""The report's page layer: a list of blocks rendered as Markdown and as one self-contained
HTML page (inline CSS and JavaScript, images as relative files next to it; nothing fetched
from the network).

Text from the data (instance, set and solver names, paths, messages) is never markup: a
paragraph is a list of segments — plain ``str``, :class:`Code`, :class:`Bold`,
:class:`Link` — and each renderer escapes every segment for its format (HTML entities;
Markdown: HTML entities plus backslash escapes of the Markdown punctuation, so that ``|``,
backticks or ``<script>`` in a name stay text). Table cells are ``str`` or :class:`Link`.
The HTML page has a navigation bar built from the section headings, and tables marked
``sortable`` sort by a click on a column header (a few lines of inline JavaScript; numbers
and percentages sort as numbers).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from urllib.parse import quote


class Code(str):
    """Inline code."""


class Bold(str):
    """Bold text."""


@dataclass(frozen=True)
class Link:
    text: str
    href: str


Inline = str | Code | Bold | Link


@dataclass
class Block:
    kind: str  # h1 h2 h3 p table img code
    text: list[Inline] | str = ""
    head: list[str] = field(default_factory=list)
    rows: list[list[str | Link]] = field(default_factory=list)
    #: anchor of a heading (h2 / h3 with an id enter the navigation)
    id: str = ""
    sortable: bool = False
    #: the heading's text in the navigation (default: the heading)
    nav: str = ""


def anchor(*parts: str) -> str:
    """A stable HTML id from names (letters, digits, ``-``)."""
    return "-".join(re.sub(r"[^A-Za-z0-9]+", "-", p).strip("-").lower() or "x" for p in parts)


# --------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------

#: Markdown punctuation that can start markup anywhere in a line (``<``, ``>`` and ``&``
#: become entities first; ``( ) ! #`` need a ``[`` or a line start, which never come from data)
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]|~])")


def md_escape(text: str) -> str:
    """Text that Markdown renders as itself: HTML entities for ``& < >``, backslash before
    Markdown punctuation, line breaks as spaces."""
    t = html.escape(str(text), quote=False).replace("\r", " ").replace("\n", " ")
    return _MD_SPECIAL.sub(r"\\\1", t)


def _md_href(href: str) -> str:
    return quote(href, safe="/:#?=&.-_~%")


def _md_inline(seg: Inline) -> str:
    if isinstance(seg, Link):
        return f"[{md_escape(seg.text)}]({_md_href(seg.href)})"
    if isinstance(seg, Code):
        ticks = "``" if "`" in seg else "`"
        return f"{ticks} {seg} {ticks}" if ticks == "``" else f"`{seg}`"
    if isinstance(seg, Bold):
        return f"**{md_escape(seg)}**"
    return md_escape(seg)


def _segments(text: list[Inline] | str) -> list[Inline]:
    return [text] if isinstance(text, str) else list(text)


def markdown(blocks: list[Block]) -> str:
    out = []
    for b in blocks:
        if b.kind in ("h1", "h2", "h3"):
            # the page's own anchor (an id made by anchor(): letters, digits and "-" only)
            target = f'<a id="{b.id}"></a>\n\n' if re.fullmatch(r"[a-z0-9-]+", b.id) else ""
            out.append(target + "#" * int(b.kind[1]) + " " + "".join(_md_inline(s) for s in _segments(b.text)) + "\n")
        elif b.kind == "p":
            out.append("".join(_md_inline(s) for s in _segments(b.text)) + "\n")
        elif b.kind == "code":
            fence = "~~~~" if "```" in str(b.text) else "```"
            out.append(f"{fence}\n{b.text}\n{fence}\n")
        elif b.kind == "img":
            out.append(f"![{md_escape(b.head[0] if b.head else '')}]({_md_href(str(b.text))})\n")
        elif b.kind == "table":
            out.append("| " + " | ".join(md_escape(h) for h in b.head) + " |")
            out.append("| " + " | ".join("---" for _ in b.head) + " |")
            for r in b.rows:
                out.append("| " + " | ".join(_md_inline(c) for c in r) + " |")
            out.append("")
    return "\n".join(out)


# --------------------------------------------------------------------------------------
# HTML
# --------------------------------------------------------------------------------------

_CSS = """
:root{--fg:#1d1d1f;--muted:#5f6368;--line:#d9dce1;--head:#f2f4f7;--accent:#0b63b5}
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);margin:0;line-height:1.45}
nav{position:fixed;top:0;left:0;bottom:0;width:230px;overflow-y:auto;background:#f7f8fa;
    border-right:1px solid var(--line);padding:1em 0.8em;font-size:0.88em}
nav a{color:var(--fg);text-decoration:none;display:block;padding:2px 4px;border-radius:3px}
nav a:hover{background:#e6eef8}
nav ul{list-style:none;margin:0;padding-left:0.8em}nav>ul{padding-left:0}
nav .nav-title{font-weight:600;margin-bottom:0.4em}
main{margin-left:250px;padding:1em 2em 4em;max-width:1250px}
h1{margin-top:0.2em}h2{border-bottom:2px solid var(--line);padding-bottom:0.2em;margin-top:2em}
h3{margin-top:1.6em}
table{border-collapse:collapse;margin:0.5em 0 1.5em;font-size:0.86em}
th,td{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--head);position:sticky;top:0}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tr:nth-child(even) td{background:#fafbfc}
table.sortable th{cursor:pointer;user-select:none}
table.sortable th::after{content:" \\2195";color:#9aa0a6;font-size:0.8em}
table.sortable th.asc::after{content:" \\2191";color:var(--accent)}
table.sortable th.desc::after{content:" \\2193";color:var(--accent)}
.figure{margin:0.6em 0 1.4em}
.figure img{max-width:100%;height:auto;border:1px solid #eee}
.figure .cap{font-size:0.85em;color:var(--muted)}
a{color:var(--accent)}
code,pre{background:#f3f4f6;border-radius:3px}code{padding:0 3px}
pre{padding:0.6em;overflow-x:auto}
.status-closed{color:#1a7f37;font-weight:600}.status-open{color:#9a6700}.status-conflict{color:#cf222e;font-weight:600}
"""

# sort a table by the clicked column; numbers (and 12.5%, 3 [1, 4]) by value, "–" last
_JS = """
(function(){
  function key(td){
    var t=(td.getAttribute('data-v')!==null?td.getAttribute('data-v'):td.textContent).trim();
    var m=t.match(/^-?[0-9][0-9,]*\\.?[0-9]*(e-?[0-9]+)?/i);
    return m?{n:parseFloat(m[0].replace(/,/g,'')),t:t}:{n:null,t:t};
  }
  document.querySelectorAll('table.sortable').forEach(function(table){
    var ths=table.querySelectorAll('thead th');
    ths.forEach(function(th,col){
      th.addEventListener('click',function(){
        var asc=!th.classList.contains('asc');
        ths.forEach(function(h){h.classList.remove('asc','desc');});
        th.classList.add(asc?'asc':'desc');
        var body=table.tBodies[0];
        var rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(a,b){
          var x=key(a.cells[col]),y=key(b.cells[col]);
          if(x.n===null&&y.n===null)return asc?x.t.localeCompare(y.t):y.t.localeCompare(x.t);
          if(x.n===null)return 1;if(y.n===null)return -1;
          return asc?x.n-y.n:y.n-x.n;
        });
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
  });
})();
"""

_NUM = re.compile(r"^-?[0-9][0-9,]*(\.[0-9]+)?(e-?[0-9]+)?%?( \[.*\])?$")


def _h_inline(seg: Inline) -> str:
    if isinstance(seg, Link):
        return f'<a href="{html.escape(seg.href)}">{html.escape(seg.text)}</a>'
    if isinstance(seg, Code):
        return f"<code>{html.escape(seg)}</code>"
    if isinstance(seg, Bold):
        return f"<b>{html.escape(seg)}</b>"
    return html.escape(str(seg))


def _cell(c: str | Link) -> str:
    text = c.text if isinstance(c, Link) else str(c)
    cls = ' class="num"' if _NUM.match(text) else ""
    if text.startswith("closed"):
        cls = ' class="status-closed"'
    elif text.startswith("open"):
        cls = ' class="status-open"'
    elif text == "conflict":
        cls = ' class="status-conflict"'
    return f"<td{cls}>{_h_inline(c)}</td>"


def _nav(blocks: list[Block]) -> str:
    out = ['<nav><div class="nav-title">Contents</div><ul>']
    open_sub = False
    for b in blocks:
        if b.kind not in ("h2", "h3") or not b.id:
            continue
        text = html.escape(b.nav or "".join(str(getattr(s, "text", s)) for s in _segments(b.text)))
        if b.kind == "h2":
            if open_sub:
                out.append("</ul></li>")
                open_sub = False
            out.append(f'<li><a href="#{b.id}">{text}</a>')
            out.append("<ul>")
            open_sub = True
        else:
            out.append(f'<li><a href="#{b.id}">{text}</a></li>')
    if open_sub:
        out.append("</ul></li>")
    out.append("</ul></nav>")
    return "".join(out).replace("<ul></ul>", "")


def page(blocks: list[Block], title: str) -> str:
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>", _nav(blocks), "<main>"]
    for b in blocks:
        ident = f' id="{html.escape(b.id)}"' if b.id else ""
        if b.kind in ("h1", "h2", "h3"):
            out.append(f"<{b.kind}{ident}>{''.join(_h_inline(s) for s in _segments(b.text))}</{b.kind}>")
        elif b.kind == "p":
            out.append(f"<p>{''.join(_h_inline(s) for s in _segments(b.text))}</p>")
        elif b.kind == "code":
            out.append(f"<pre>{html.escape(str(b.text))}</pre>")
        elif b.kind == "img":
            cap = html.escape(b.head[0] if b.head else "")
            src = html.escape(str(b.text))
            svg = html.escape(str(b.text)[:-4] + ".svg") if str(b.text).endswith(".png") else ""
            link = f' (<a href="{svg}">SVG</a>)' if svg else ""
            out.append(f'<div class="figure"><img src="{src}" alt="{cap}">'
                       f'<div class="cap">{cap}{link}</div></div>')
        elif b.kind == "table":
            cls = ' class="sortable"' if b.sortable else ""
            out.append(f"<table{cls}{ident}><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in b.head)
                       + "</tr></thead><tbody>")
            for r in b.rows:
                out.append("<tr>" + "".join(_cell(c) for c in r) + "</tr>")
            out.append("</tbody></table>")
    out.append(f"</main><script>{_JS}</script></body></html>")
    return "\n".join(out)
