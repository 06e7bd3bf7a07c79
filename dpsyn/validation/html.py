"""A self-contained HTML report of the validation gate.

One file, no network: styles inline, every plot an inline SVG. It shows the
verdict, each failed check by name, every check with its (noisy) value and
limit, the utility check, and per column the real distribution (as the gate
released it, with DP noise) against the synthetic one over the schema's
public categories or bins. It holds what :class:`ValidationReport` holds and
nothing else: DP statistics, public labels and synthetic shares, never a
value of a real row.
"""

from __future__ import annotations

import html
import math
from datetime import UTC, datetime

__all__ = ["CSS", "bar_chart_svg", "render_html"]

MAX_BARS = 30  # bars per plot; the smallest categories (by their larger share) are merged into "other"

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#f6f8fa}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px}
.meta{color:#57606a;margin-bottom:16px}
.verdict{padding:14px 18px;border-radius:8px;font-size:18px;font-weight:600;margin:12px 0}
.verdict.pass{background:#dafbe1;color:#116329;border:1px solid #4ac26b}
.verdict.fail{background:#ffebe9;color:#a40e26;border:1px solid #ff8182}
table{border-collapse:collapse;width:100%;background:#fff}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;font-variant-numeric:tabular-nums}
th{background:#eaeef2} tr.fail td{background:#fff5f5} td.ok{color:#116329} td.bad{color:#a40e26;font-weight:600}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(330px,1fr));gap:14px}
figure.plot{margin:0;background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:8px}
figure.plot.fail{border-color:#ff8182}
figcaption{font-weight:600;margin-bottom:4px;overflow-wrap:anywhere} .small{color:#57606a;font-size:12px}
.legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 10px;vertical-align:middle}
"""

_REAL, _SYN = "#0969da", "#fb8f44"


def _e(x) -> str:
    return html.escape(str(x), quote=True)


def _fmt(x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.4f}"


def _bars(labels: list[str], real: list[float], synth: list[float]) -> tuple[list[str], list[float], list[float]]:
    """At most MAX_BARS bars: keep the largest categories in their public order, merge the rest."""
    if len(labels) <= MAX_BARS:
        return labels, real, synth
    size = [max(r, s) for r, s in zip(real, synth, strict=True)]
    keep = sorted(sorted(range(len(labels)), key=lambda i: -size[i])[: MAX_BARS - 1])
    rest = [i for i in range(len(labels)) if i not in set(keep)]
    return ([labels[i] for i in keep] + [f"other ({len(rest)})"], [real[i] for i in keep] + [sum(real[i] for i in rest)],
            [synth[i] for i in keep] + [sum(synth[i] for i in rest)])


def bar_chart_svg(column: str, labels: list[str], real: list[float], synth: list[float],
                  names: tuple[str, str] = ("real (DP)", "synthetic")) -> str:
    """Grouped bars, the first series (noisy: negatives shown as 0) beside the second, as inline SVG."""
    labels, real, synth = _bars(labels, real, synth)
    w, h, left, bottom, top = 320, 190, 34, 58, 8
    k = max(len(labels), 1)
    top_v = max([max(r, 0.0) for r in real] + [max(x, 0.0) for x in synth] + [1e-9])
    slot = (w - left - 4) / k
    bw = max(slot * 0.4, 0.8)
    parts = [f'<svg class="chart" role="img" aria-label="{_e(column)}: {_e(names[0])} vs {_e(names[1])}" viewBox="0 0 {w} {h}" '
             f'width="100%" xmlns="http://www.w3.org/2000/svg">']
    who_a, who_b = names
    ph = h - bottom - top
    for t in (0.0, 0.5, 1.0):  # y grid
        y = top + ph * (1 - t)
        parts.append(f'<line x1="{left}" x2="{w - 2}" y1="{y:.1f}" y2="{y:.1f}" stroke="#d0d7de" stroke-width="0.6"/>')
        parts.append(f'<text x="{left - 3}" y="{y + 3:.1f}" font-size="8" text-anchor="end" fill="#57606a">'
                     f'{top_v * t:.2f}</text>')
    for i, (lab, r, s) in enumerate(zip(labels, real, synth, strict=True)):
        x0 = left + i * slot + slot * 0.1
        for j, (v, color, who) in enumerate(((max(r, 0.0), _REAL, who_a), (max(s, 0.0), _SYN, who_b))):
            bh = ph * v / top_v
            parts.append(f'<rect x="{x0 + j * bw:.2f}" y="{top + ph - bh:.2f}" width="{bw:.2f}" height="{bh:.2f}" '
                         f'fill="{color}"><title>{_e(lab)} · {who}: {v:.4f}</title></rect>')
        lx = left + (i + 0.5) * slot
        short = lab if len(lab) <= 14 else lab[:13] + "…"
        parts.append(f'<text x="{lx:.1f}" y="{top + ph + 6}" font-size="7" text-anchor="end" fill="#1f2328" '
                     f'transform="rotate(-55 {lx:.1f} {top + ph + 6})">{_e(short)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def render_html(report, *, title: str = "dpsyn validation report", context: dict | None = None) -> str:
    """The report as one HTML page (str). ``context``: extra public facts shown at the top (run id, ε, ...)."""
    ok = report.is_valid()
    failures = report.failures()
    failed_cols = {c.column for c in failures} | {p for c in failures for p in c.column.split("/")}
    made = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    out = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>'
           f'<meta name="viewport" content="width=device-width,initial-scale=1"><style>{CSS}</style></head><body><main>',
           f"<h1>{_e(title)}</h1>",
           f'<div class="meta">{_e(made)} · real rows {report.n_real:,} · synthetic rows {report.n_synthetic:,} · '
           f"one-way noise std {report.noise_std:.4f}</div>"]
    weak = report.uninformative()
    if ok:
        out.append(f'<div id="verdict" class="verdict pass" data-verdict="pass">PASSED: {len(report.checks) - len(weak)} '
                   f"of {len(report.checks)} checks passed, {len(weak)} uninformative (too noisy to judge at this "
                   "size and ε, shown below); the table may be published.</div>")
    elif report.verdict == "uninformative":
        out.append('<div id="verdict" class="verdict fail" data-verdict="uninformative">UNINFORMATIVE: no check '
                   f"failed, but {len(weak)} of {len(report.checks)} checks (primary ones among them) are too noisy "
                   "to judge at this size and ε; nothing is published unless the run allows it.</div>")
    else:
        out.append(f'<div id="verdict" class="verdict fail" data-verdict="fail">FAILED: {len(failures)} of '
                   f"{len(report.checks)} checks failed; nothing is published.</div>")
        out.append('<ul id="failed-checks">' + "".join(
            f"<li><code>{_e(c.name)}</code>: {_fmt(c.value)} &gt; limit {_fmt(c.limit)}</li>" for c in failures)
            + "</ul>")
    if context:
        out.append("<h2>Run</h2><table>" + "".join(
            f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in context.items()) + "</table>")
    if report.utility:
        u = report.utility
        out.append("<h2>Utility</h2><table><tr><th>holdout rows</th><th>positive class</th><th>AUC train-on-synthetic"
                   "</th><th>AUC DP train-on-real</th></tr>"
                   f"<tr><td>{u.get('holdout_rows', '')}</td><td>{_e(u.get('positive', ''))}</td>"
                   f"<td>{_fmt(u.get('auc_tstr'))}</td><td>{_fmt(u.get('auc_trtr'))}</td></tr></table>")
    if report.histograms:
        out.append('<h2>Real vs synthetic, per column</h2><div class="legend small">'
                   f'<span style="background:{_REAL}"></span>real (released with DP noise; std per bar shown under '
                   f'each plot) <span style="background:{_SYN}"></span>synthetic</div><div class="grid">')
        for hgm in report.histograms:
            cls = "plot fail" if hgm.column in failed_cols else "plot"
            out.append(f'<figure class="{cls}" data-column="{_e(hgm.column)}"><figcaption>{_e(hgm.column)}'
                       f"</figcaption>{bar_chart_svg(hgm.column, hgm.labels, hgm.real, hgm.synthetic)}"
                       f'<div class="small">noise std {hgm.noise_std:.4f} per bar</div></figure>')
        out.append("</div>")
    out.append("<h2>Checks</h2><table><tr><th>check</th><th>statistic</th><th>value (DP)</th><th>threshold</th>"
               "<th>limit</th><th>noise std</th><th>verdict</th></tr>")
    order = {"failed": 0, "uninformative": 1, "passed": 2}
    shown = {"failed": "FAIL", "uninformative": "uninformative", "passed": "pass"}
    for c in sorted(report.checks, key=lambda c: (order[c.status], not c.primary, c.name)):
        out.append(f'<tr class="{"ok" if c.passed else "fail"}"><td><code>{_e(c.name)}</code></td><td>{_e(c.statistic)}'
                   f"</td><td>{_fmt(c.value)}</td><td>{_fmt(c.threshold)}</td><td>{_fmt(c.limit)}</td>"
                   f'<td>{_fmt(c.noise_std)}</td><td class="{"ok" if c.passed else "bad"}">'
                   f'{shown[c.status]}</td></tr>')
    out.append("</table>")
    out.append('<p class="small">Every real-side number on this page (check values, real bars, utility AUCs) was '
               "released by the gate's Gaussian mechanism and charged to the run's privacy accountant; labels are the "
               "schema's public categories and bins. Synthetic bars are exact (the synthetic table is public).</p>")
    out.append("</main></body></html>")
    return "\n".join(out)
