"""The HTML page's assets, inline: its styles, its one small script, and Pygments' token colours."""

from __future__ import annotations

CSS = """
:root{--fg:#1d232b;--dim:#5f6b7a;--line:#d8dee6;--bg:#fff;--soft:#f5f7fa;--accent:#6a3fb5}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
header{padding:16px 24px 8px;border-bottom:1px solid var(--line);position:sticky;top:0;background:var(--bg);z-index:2}
h1{margin:0;font-size:20px}h1 .target{color:var(--accent)}
h2{font-size:18px;margin:28px 0 10px;padding-bottom:4px;border-bottom:2px solid var(--line)}h3{font-size:15px}
main{padding:0 24px 48px;max-width:1600px}
nav a{margin-right:14px;color:var(--accent);text-decoration:none;font-weight:600}
.meta{color:var(--dim);margin:2px 0 6px}
.stats{display:grid;grid-template-columns:repeat(auto-fill,minmax(128px,1fr));gap:10px}
.stat{border:1px solid var(--line);border-radius:8px;padding:10px 12px;background:var(--soft)}
.stat b{display:block;font-size:24px;font-variant-numeric:tabular-nums}.stat span{color:var(--dim);font-size:12px}
.stages{list-style:none;padding:0;display:flex;gap:18px;flex-wrap:wrap}
.badge{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;font-weight:600;vertical-align:middle}
.badge.ok{background:#dcf5e3;color:#17692f}.badge.failed{background:#fde0e0;color:#a11}.badge.notrun{background:#eceff3;color:var(--dim)}
.err,.alert{color:#a11}.alert{font-weight:600}.none{color:var(--dim)}
details{margin:6px 0}details.table{overflow-x:auto}[id]{scroll-margin-top:120px}details>summary{cursor:pointer;padding:4px 2px}
details.graph,details.break{border:1px solid var(--line);border-radius:8px;padding:4px 12px;margin:10px 0}
details.graph>summary,details.break>summary{font-weight:600}
.art{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;color:var(--accent);font-weight:600}
table{border-collapse:collapse;margin:6px 0;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);position:sticky;top:0}
td.name,td.kname{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;white-space:nowrap}
td.args{font-family:ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;min-width:220px;max-width:520px;overflow-wrap:break-word;color:var(--dim)}
td.t{white-space:nowrap}a{color:var(--accent)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{font:12px/1.4 ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;background:var(--soft);padding:8px 10px;border-radius:6px;overflow:auto;max-height:560px}
pre.context i{display:inline-block;width:3.5em;color:var(--dim);font-style:normal}
pre.context .hit{background:#fde0e0;display:block;font-weight:600}pre.context .ln{display:block}
.sw{display:inline-block;width:12px;height:12px;border:1px solid #555;border-radius:3px;margin-right:6px;vertical-align:-1px}
.sw.ext{border-width:3px;border-style:double;border-radius:0}.sw.in{background:#eef1f5}
.sw.none{border-style:dashed;background:#fff}.sw.brk{background:#d62728;border-color:#d62728}
.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:4px 16px;font-size:12px}
.svg text{font-family:Helvetica,Arial,"Liberation Sans",sans-serif}
.svg{overflow:auto;max-height:85vh;border:1px solid var(--line);border-radius:6px;padding:6px}
.note{color:#7a5b00;background:#fff7d6;padding:4px 8px;border-radius:4px}
.breaknote{color:#a11;margin:4px 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px}dt{font-weight:600;color:var(--dim)}dd{margin:0}
.ctrow p{margin:8px 0 2px}svg.ct{display:block;background:#f6f6f6}.ctlegend{font-size:12px;color:var(--dim)}
.ctkey{margin-right:12px;white-space:nowrap}.ctfind .fix{color:#276738}
footer{color:var(--dim);font-size:12px;padding:16px 24px;border-top:1px solid var(--line)}
"""

#: The page's one script: inserts a closed block's deferred body when it is opened, and opens the
#: blocks around a linked anchor (a kernel's code from the kernel table).
SCRIPT = """
document.addEventListener("toggle", function (e) {
  var d = e.target;
  if (d.tagName !== "DETAILS" || !d.open) return;
  var s = d.querySelector(":scope > script[type='text/html']");
  if (s) { s.insertAdjacentHTML("afterend", s.textContent); s.remove(); }
}, true);
function openTarget() {
  var id = decodeURIComponent(location.hash.slice(1));
  for (var t = id && document.getElementById(id); t; t = t.parentElement) if (t.tagName === "DETAILS") t.open = true;
}
window.addEventListener("hashchange", openTarget);
openTarget();
"""
