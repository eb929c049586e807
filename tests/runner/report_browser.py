"""Open a local HTML file in headless Chromium through the DevTools protocol (the browser's
own ``--remote-debugging-port``, a websocket spoken with tornado, which the Dask dependency
brings) and report what a person would see: console errors, uncaught exceptions, failed
loads, images that did not render, requests that left the machine, and a screenshot.

Used by ``tests/runner/test_report_browser.py``; also a command:

    python tests/runner/report_browser.py runs/default/report/report.html runs/report-screenshot.png
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser() -> str | None:
    env = os.environ.get("EDGEBENCH_BROWSER")
    if env:
        return env if shutil.which(env) or Path(env).is_file() else None
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


@dataclass
class PageReport:
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    failed_loads: list[str] = field(default_factory=list)
    broken_images: list[str] = field(default_factory=list)
    remote_requests: list[str] = field(default_factory=list)
    images: int = 0
    sorted_ok: bool | None = None
    title: str = ""

    def problems(self) -> list[str]:
        return ([f"console error: {m}" for m in self.console_errors] + [f"exception: {m}" for m in self.exceptions]
                + [f"failed load: {m}" for m in self.failed_loads] + [f"broken image: {m}" for m in self.broken_images]
                + [f"network request: {m}" for m in self.remote_requests])


# after load: the images that did not render, and a click on the first sortable column of
# the first sortable table with more than two rows (does the order change and come back?)
_CHECK = """
(function(){
  var broken=Array.prototype.filter.call(document.images,function(i){return !(i.complete&&i.naturalWidth>0);})
      .map(function(i){return i.getAttribute('src');});
  var sorted=null;
  var t=Array.prototype.find.call(document.querySelectorAll('table.sortable'),
                                  function(t){return t.tBodies[0].rows.length>2;});
  if(t){
    var col=t.tHead.rows[0].cells.length-1;
    var read=function(){
      return Array.prototype.map.call(t.tBodies[0].rows,function(r){return r.cells[col].textContent;});
    };
    var before=read();
    t.tHead.rows[0].cells[col].click(); var asc=read();
    t.tHead.rows[0].cells[col].click(); var desc=read();
    sorted=t.tHead.rows[0].cells[col].classList.contains('desc')&&asc.join('|')===desc.slice().reverse().join('|')
           &&asc.slice().sort().join('|')===before.slice().sort().join('|');
  }
  return JSON.stringify({broken:broken,images:document.images.length,sorted:sorted,title:document.title});
})()
"""


async def _session(ws_url: str, url: str, screenshot: Path | None, width: int, height: int,
                   full_page: bool) -> PageReport:
    from tornado.websocket import websocket_connect

    conn = await websocket_connect(ws_url, max_message_size=256 * 1024 * 1024)
    ids = itertools.count(1)
    rep = PageReport()
    pending: dict[int, asyncio.Future] = {}
    loaded = asyncio.get_running_loop().create_future()

    async def reader():
        while True:
            msg = await conn.read_message()
            if msg is None:
                return
            m = json.loads(msg)
            if "id" in m and m["id"] in pending:
                pending.pop(m["id"]).set_result(m)
                continue
            method, p = m.get("method"), m.get("params", {})
            if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                rep.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
            elif method == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                rep.exceptions.append(d.get("exception", {}).get("description") or d.get("text", ""))
            elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                rep.console_errors.append(p["entry"].get("text", ""))
            elif method == "Network.loadingFailed":
                rep.failed_loads.append(p.get("errorText", "") + " " + p.get("requestId", ""))
            elif method == "Network.requestWillBeSent":
                u = p.get("request", {}).get("url", "")
                if not re.match(r"^(file|data|about|blob):", u):
                    rep.remote_requests.append(u)
            elif method == "Page.javascriptDialogOpening":  # a script ran: record it, close the dialog
                rep.exceptions.append(f"dialog {p.get('type')}: {p.get('message')}")
                await conn.write_message(json.dumps({"id": next(ids), "method": "Page.handleJavaScriptDialog",
                                                     "params": {"accept": True}}))
            elif method == "Page.loadEventFired" and not loaded.done():
                loaded.set_result(True)

    task = asyncio.create_task(reader())

    async def call(method: str, **params):
        i = next(ids)
        fut = asyncio.get_running_loop().create_future()
        pending[i] = fut
        await conn.write_message(json.dumps({"id": i, "method": method, "params": params}))
        res = await asyncio.wait_for(fut, 60)
        if "error" in res:
            raise RuntimeError(f"{method}: {res['error']}")
        return res.get("result", {})

    for domain in ("Runtime", "Log", "Network", "Page"):
        await call(f"{domain}.enable")
    await call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
    await call("Page.navigate", url=url)
    await asyncio.wait_for(loaded, 60)
    await asyncio.sleep(0.3)  # late console messages
    if screenshot is not None:  # the page as it opens, before the checks click on it
        if full_page:
            h = await call("Runtime.evaluate", expression="document.documentElement.scrollHeight", returnByValue=True)
            await call("Emulation.setDeviceMetricsOverride", width=width, height=min(int(h["result"]["value"]), 30000),
                       deviceScaleFactor=1, mobile=False)
        shot = await call("Page.captureScreenshot", format="png")
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
    res = await call("Runtime.evaluate", expression=_CHECK, returnByValue=True)
    info = json.loads(res["result"]["value"])
    rep.broken_images, rep.images = info["broken"], info["images"]
    rep.sorted_ok, rep.title = info["sorted"], info["title"]
    conn.close()
    task.cancel()
    return rep


def open_page(browser: str, html_file: Path, screenshot: Path | None = None, *, width: int = 1400,
              height: int = 900, full_page: bool = False) -> PageReport:
    """Load ``html_file`` in a fresh headless browser (its own profile folder, removed after);
    ``screenshot``: the first screen (``full_page``: the whole page) as PNG."""
    # the browser's helper processes may still write into the profile for a moment after the main
    # process ends (seen once: "Directory not empty: 'Default'" on the folder's removal), so the
    # folder is removed by _remove_profile, which retries, never by a removal that fails the test
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen([browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                 "--disable-extensions", "--disable-background-networking", "--remote-debugging-port=0",
                                 f"--user-data-dir={profile}", "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            port = _devtools_port(proc, Path(profile))
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
                targets = json.load(r)
            ws = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
            return asyncio.run(_session(ws, Path(html_file).resolve().as_uri(), screenshot, width, height, full_page))
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            _remove_profile(Path(profile))


def _remove_profile(profile: Path, tries: int = 20) -> None:
    """Remove a browser profile folder, retrying while late writes of the browser's helper
    processes refill it (at most ``tries`` x 0.25 s; what is left then stays in the temp folder)."""
    for _ in range(tries):
        shutil.rmtree(profile, ignore_errors=True)
        if not profile.exists():
            return
        time.sleep(0.25)


def _devtools_port(proc: subprocess.Popen, profile: Path) -> int:
    """The port Chromium chose: it writes it to ``DevToolsActivePort`` in the profile."""
    deadline = time.monotonic() + 60
    f = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the browser exited ({proc.returncode}): {proc.stderr.read()[-2000:]}")
        if f.is_file():
            first = f.read_text().split("\n")[0].strip()
            if first.isdigit():
                return int(first)
        time.sleep(0.1)
    raise RuntimeError("the browser did not open its DevTools port within 60 s")


if __name__ == "__main__":
    b = find_browser()
    if b is None:
        sys.exit("no Chromium found (apt-get install chromium)")
    r = open_page(b, Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None,
                  full_page="--full" in sys.argv)
    print(json.dumps(r.__dict__, indent=1))
    sys.exit(1 if r.problems() else 0)
