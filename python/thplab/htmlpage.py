"""Self-contained HTML pages (figures inlined as PNG data URIs) for the seeds report,
`thplab show --html` and `thplab sweep`.

Every page carries a small check that a browser test reads: once loaded, the document title
becomes `figures-ok N/M errors E`, where N of the M figures decoded and are laid out with a
visible size and E counts script errors, failed resources and console.error calls.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence

CSS = """body{font-family:system-ui,sans-serif;max-width:1150px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}h3{font-size:1.05em;margin-top:1.5em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}th{background:#f4f4f4}tr.flag td{background:#fde2e2}
figure{margin:1.2em 0}figcaption{font-size:13px;color:#444;max-width:900px}figcaption b{color:#222}
img.figure{max-width:100%;border:1px solid #ddd}.err{color:#a00}.note{color:#555;font-size:13px}
pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:12px}.cols{columns:2;column-gap:2em}"""

CHECK = """<script>
(function () {
  var errors = 0;
  window.addEventListener('error', function () { errors++; }, true);
  var ce = console.error;
  console.error = function () { errors++; return ce.apply(console, arguments); };
  window.addEventListener('load', function () {
    var imgs = document.querySelectorAll('img.figure'), ok = 0;
    imgs.forEach(function (i) {
      var r = i.getBoundingClientRect(), s = getComputedStyle(i);
      if (i.complete && i.naturalWidth > 0 && r.width > 50 && r.height > 50 &&
          s.visibility !== 'hidden' && s.display !== 'none') ok++;
    });
    document.title = 'figures-ok ' + ok + '/' + imgs.length + ' errors ' + errors;
  });
})();
</script>"""


def esc(s: object) -> str:
    return html.escape(str(s))


def figure(png: bytes, title: str, caption: str = "") -> str:
    b64 = base64.b64encode(png).decode()
    cap = f"<b>{esc(title)}</b>" + (f". {esc(caption)}" if caption else "")
    return (
        f'<figure><img class="figure" alt="{esc(title)}" src="data:image/png;base64,{b64}">'
        f"<figcaption>{cap}</figcaption></figure>"
    )


def table(header: Sequence[str], rows: Sequence[Sequence[str]], flagged: Sequence[bool] | None = None) -> str:
    out = ["<table><tr>" + "".join(f"<th>{esc(c)}</th>" for c in header) + "</tr>"]
    for i, r in enumerate(rows):
        cls = ' class="flag"' if flagged and flagged[i] else ""
        out.append(f"<tr{cls}>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>")
    out.append("</table>")
    return "".join(out)


def page(title: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{esc(title)}</title>'
        f"<style>{CSS}</style></head><body>{body}{CHECK}</body></html>"
    )
