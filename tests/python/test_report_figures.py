"""A study report's figures as a reader sees them: rendered in headless Chromium, each figure
measured in the page (SVG text kept as text, so tick labels are DOM elements with boxes).

Checked on every figure of the report: present and non-empty (every drawn axes holds data);
tick labels in the factors' order (the study lists its buffers out of numeric order on
purpose); no two text labels of a figure overlap; no interval of a non-negative quantity
reaches below its axes' zero line; one colour per CC across every figure. The checks are run
on a page of deliberately broken figures too, and must find each fault there.
"""

from __future__ import annotations

import html as html_module
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import cli_here, report_dir_fixture, requires_engine
from study_texts import prague_vs_cubic

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (.ci/run installs Debian's chromium)"
)

#: The buffers in the study file's order (deliberately not sorted: figures must follow it).
BUFFERS = ["2bdp", "0.5bdp", "4bdp"]
QUEUES = ["dualpi2 target 5ms", "fq_codel target 5ms ecn", "bfifo"]

STUDY = prague_vs_cubic("figures-check", 3, 2, "1s", {"bottleneck.qdisc": QUEUES, "bottleneck.buffer": BUFFERS})

#: Runs after load: per figure its size, and per axes its tick labels (text and box), whether
#: it holds data, its zero line and the lowest point of its intervals; every text box; and the
#: colour of every CC-tagged artist (ids from l4slab.analysis.figures: l4slab-cc-<cc>-<n>,
#: l4slab-interval-<n>, l4slab-zero-<n>). The result goes into a <pre> that --dump-dom prints.
PROBE = r"""<script>window.__errors=[];
window.addEventListener('error',e=>window.__errors.push(String(e.message||e)),true);
window.addEventListener('load',()=>{
 const box=e=>{const r=e.getBoundingClientRect();return [r.left,r.top,r.right,r.bottom]};
 const colour=e=>{const p=e.matches('path,use,rect')?e:e.querySelector('path,use,rect');if(!p)return null;
   const s=getComputedStyle(p);return (s.stroke&&s.stroke!=='none')?s.stroke:s.fill};
 const points=d=>((d||'').match(/[ML]/g)||[]).length;
 const figures=[...document.querySelectorAll('figure')].map(fig=>{
  const svg=fig.querySelector('svg');
  const out={title:fig.getAttribute('title')||'',size:[fig.getBoundingClientRect().width,fig.getBoundingClientRect().height],
             axes:[],texts:[],cc:[]};
  if(!svg)return out;
  svg.querySelectorAll('text').forEach(t=>{if(t.textContent.trim())out.texts.push([t.textContent,...box(t)])});
  svg.querySelectorAll('[id^="l4slab-cc-"]').forEach(e=>{const m=e.id.match(/^l4slab-cc-(.*)-\d+$/);
    if(m)out.cc.push([m[1],colour(e)])});
  svg.querySelectorAll('g[id^="axes_"]').forEach(ax=>{
    const kids=[...ax.children];
    const data=kids.filter(c=>{const id=c.id||'';
      if(/^(l4slab-interval-|image|QuadMesh)|Collection/.test(id))return true;
      if(/^(line2d_|l4slab-cc-)/.test(id)){const p=c.querySelector('path');
        return c.querySelector('use')!==null||(p&&points(p.getAttribute('d'))>=3)||(p&&c.id.startsWith('l4slab-cc-'))}
      return false}).length;
    const ticks=axis=>[...ax.querySelectorAll(`g[id^="${axis}tick_"] text`)].filter(t=>t.textContent.trim())
      .map(t=>[t.textContent,...box(t)]);
    const zero=kids.filter(c=>(c.id||'').startsWith('l4slab-zero-')).map(c=>box(c)[1]);
    const low=kids.filter(c=>(c.id||'').startsWith('l4slab-interval-')).map(c=>box(c)[3]);
    out.axes.push({data,xticks:ticks('x'),yticks:ticks('y'),zero,low:low.length?Math.max(...low):null});
  });
  return out});
 const p=document.createElement('pre');p.id='l4slab-probe';
 p.textContent=JSON.stringify({figures,errors:window.__errors});document.body.appendChild(p);});
</script>"""


def _chromium(*args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars"]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=timeout)


def probe_page(page: str, tmp_path: Path) -> dict:
    """Render ``page`` in headless Chromium and return what :data:`PROBE` measured."""
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("<head>", "<head>\n" + PROBE, 1), encoding="utf-8")
    done = _chromium("--virtual-time-budget=10000", "--window-size=1400,1000", "--dump-dom", probe.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'<pre id="l4slab-probe">([^<]*)</pre>', done.stdout)
    assert found, done.stdout[-2000:]
    return json.loads(html_module.unescape(found.group(1)))


def _overlap(a, b, tolerance: float = 1.0) -> bool:
    """Two boxes [left, top, right, bottom] overlapping by more than ``tolerance`` px both ways."""
    return min(a[2], b[2]) - max(a[0], b[0]) > tolerance and min(a[3], b[3]) - max(a[1], b[1]) > tolerance


def problems(result: dict, orders: list[list[str]]) -> list[str]:
    """Every fault the measured page shows. ``orders``: the factor orders a row of x tick
    labels must follow when it holds exactly one order's labels."""
    found = [f"script error: {e}" for e in result["errors"]]
    colours: dict[str, set[str]] = {}
    for k, fig in enumerate(result["figures"]):
        name = f"figure {k} ({fig['title']})"
        if fig["size"][0] < 50 or fig["size"][1] < 50 or not fig["axes"]:
            found.append(f"{name}: empty (size {fig['size']}, {len(fig['axes'])} axes)")
        for i, ax in enumerate(fig["axes"]):
            if ax["data"] == 0:
                found.append(f"{name}: axes {i} holds no data")
            labels = [t[0] for t in sorted(ax["xticks"], key=lambda t: t[1])]
            for order in orders:
                if sorted(labels) == sorted(order) and labels != order:
                    found.append(f"{name}: axes {i} x categories {labels}, factor order {order}")
            for axis in ("xticks", "yticks"):
                ticks = ax[axis]
                for a in range(len(ticks)):
                    for b in range(a + 1, len(ticks)):
                        if _overlap(ticks[a][1:], ticks[b][1:]):
                            found.append(f"{name}: axes {i} tick labels {ticks[a][0]!r} and {ticks[b][0]!r} overlap")
            if ax["low"] is not None:
                if not ax["zero"]:
                    found.append(f"{name}: axes {i} draws intervals of a non-negative quantity without its zero line")
                elif ax["low"] > max(ax["zero"]) + 1.0:
                    found.append(f"{name}: axes {i} has an interval {ax['low'] - max(ax['zero']):.0f} px below zero")
        texts = fig["texts"]
        for a in range(len(texts)):
            for b in range(a + 1, len(texts)):
                if _overlap(texts[a][1:], texts[b][1:]):
                    found.append(f"{name}: labels {texts[a][0]!r} and {texts[b][0]!r} overlap")
        for cc, colour in fig["cc"]:
            colours.setdefault(cc, set()).add(colour)
    for cc, seen in colours.items():
        if len(seen) != 1:
            found.append(f"CC {cc} has {len(seen)} colours across the figures: {sorted(seen)}")
    by_colour: dict[str, list[str]] = {}
    for cc, seen in colours.items():
        for colour in seen:
            by_colour.setdefault(colour, []).append(cc)
    found += [f"CCs {sorted(ccs)} share the colour {c}" for c, ccs in by_colour.items() if len(ccs) > 1]
    return found


report_dir = report_dir_fixture(STUDY, "figures", timeout=900)


@requires_engine
@needs_chromium
def test_study_report_figures_render_readably_in_chromium(report_dir, tmp_path):
    markdown = (report_dir / "report.md").read_text(encoding="utf-8")
    page = (report_dir / "report.html").read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", markdown)
    assert {"queue_set0_goodput.png", "queue_set0_delay.png", "queue_set0_ccdf.png", "goodput.png"} <= set(images)
    assert "missing figure" not in page
    result = probe_page(page, tmp_path)
    assert len(result["figures"]) == len(images)
    buffers = ["2", "0.5", "4"]  # the study's order, as numbers of BDPs
    assert problems(result, [buffers]) == []
    by_title = {f["title"]: f for f in result["figures"]}
    # The per-queue figures: one panel per queue, the buffer axis in the study's order.
    goodput = by_title["goodput per queue against buffer"]
    assert len(goodput["axes"]) == len(QUEUES)
    for ax in goodput["axes"]:
        assert [t[0] for t in sorted(ax["xticks"], key=lambda t: t[1])] == buffers
        assert ax["low"] is not None and ax["zero"]  # intervals drawn, and checked against zero
    titles = [t[0] for t in goodput["texts"] if t[0] in QUEUES]
    assert titles == QUEUES  # panels in the study's queue order
    # DualPI2's L and C queues apart: in the CCDF and in the time series.
    ccdf = by_title["sojourn CCDF per queue"]
    assert len(ccdf["axes"]) == len(QUEUES) * len(BUFFERS)
    assert {"queue L", "queue C", "queue all"} <= {t[0] for t in ccdf["texts"]}
    sojourn = [f for f in result["figures"] if f["title"] == "sojourn_ms over time"]
    assert any({"L", "C"} <= {t[0] for t in f["texts"]} for f in sojourn)
    # One colour per CC, and each CC drawn in several figures.
    colours: dict[str, set] = {}
    figures_with: dict[str, int] = {}
    for fig in result["figures"]:
        for cc, colour in fig["cc"]:
            colours.setdefault(cc, set()).add(colour)
        for cc in {cc for cc, _ in fig["cc"]}:
            figures_with[cc] = figures_with.get(cc, 0) + 1
    assert set(colours) == {"prague", "cubic"} and all(len(c) == 1 for c in colours.values())
    assert min(figures_with.values()) >= 3 + 3 * len(QUEUES) * len(BUFFERS)
    # Bars in factor order: the point names follow the plan (queue-major, buffers as listed).
    bars = by_title["goodput per point"]
    ticks = [t[0] for t in sorted(bars["axes"][0]["xticks"], key=lambda t: t[1])]
    firsts = [t for t in ticks if "buffer=" in t or "qdisc=" in t]
    assert firsts, ticks


@needs_chromium
def test_the_checks_find_broken_figures(tmp_path):
    """A page of deliberately broken figures: each check must fire."""
    import numpy as np
    from l4slab.analysis import figures
    from l4slab.analysis.html import figure_svg, html_page
    from matplotlib.figure import Figure

    def wrapped(fig, title):
        return f'<figure class="fig" title="{title}">{figure_svg(fig)}</figure>'

    # 1. categories in data order, not factor order.
    data_order = Figure(figsize=(4, 3), layout="constrained")
    ax = data_order.add_subplot()
    ax.plot([0, 1, 2], [1, 2, 3], gid="l4slab-cc-prague-900001", color=figures.CC_COLOURS["prague"])
    ax.set_xticks([0, 1, 2], ["0.5", "2", "4"])
    # 2. overlapping tick labels.
    crowded = Figure(figsize=(3, 3), layout="constrained")
    ax = crowded.add_subplot()
    ax.bar(range(8), np.arange(8) + 1.0)
    ax.set_xticks(range(8), [f"qdisc=dualpi2 target 5ms · buffer={b}bdp" for b in range(8)])
    # 3. an error bar below zero for a non-negative quantity.
    negative = Figure(figsize=(4, 3), layout="constrained")
    ax = negative.add_subplot()
    ax.axhline(0.0, gid="l4slab-zero-900002")
    bars = ax.bar([0, 1], [2.0, 30.0], yerr=[[5.0, 1.0], [1.0, 1.0]])
    for coll in bars.errorbar.lines[2]:
        coll.set_gid("l4slab-interval-900003")
    ax.set_ylim(-6, 35)
    # 4. the same CC in another colour.
    swapped = Figure(figsize=(4, 3), layout="constrained")
    ax = swapped.add_subplot()
    ax.plot([0, 1, 2], [3, 2, 1], gid="l4slab-cc-prague-900004", color=figures.CC_COLOURS["cubic"])
    # 5. an empty axes.
    empty = Figure(figsize=(4, 3), layout="constrained")
    empty.add_subplot().set_title("nothing here")
    body = "".join(
        wrapped(f, t)
        for f, t in ((data_order, "order"), (crowded, "crowded"), (negative, "negative"), (swapped, "swapped"),
                     (empty, "empty"))  # fmt: skip
    )
    result = probe_page(html_page("broken", body), tmp_path)
    found = problems(result, [["0.5", "4", "2"]])
    text = "\n".join(found)
    assert "figure 0 (order): axes 0 x categories ['0.5', '2', '4'], factor order ['0.5', '4', '2']" in text, text
    assert re.search(r"figure 1 \(crowded\): axes 0 tick labels .* overlap", text), text
    assert re.search(r"figure 2 \(negative\): axes 0 has an interval \d+ px below zero", text), text
    assert "CC prague has 2 colours across the figures" in text, text
    assert "figure 4 (empty): axes 0 holds no data" in text, text
    # Figures of the same kinds drawn by l4slab pass, with long queue names and many categories:
    # titles wrapped to their panel, bar labels wrapped and the figure widened until none overlap.
    import pandas as pd

    queues = ["fq limit 167 flow_limit 167 orphan_mask 0 ce_threshold 5ms", "dualpi2 target 5ms tupdate 16ms", "bfifo"]
    buffers = ["2bdp", "0.5bdp", "4bdp", "1bdp", "8bdp", "16bdp"]
    labels = ["2", "0.5", "4", "1", "8", "16"]
    rows = [{"q": q, "b": b, "flow": f, "v": v + k} for q in queues for b in buffers for f, v in (("p", 40.0), ("c", 5.0))
            for k in range(2)]  # fmt: skip
    colours = figures.cc_colours(["prague", "cubic"])
    lines = figures.factor_lines(pd.DataFrame(rows), facet="q", x="b", value="v", line="flow", x_order=buffers,
                                 x_labels=labels, colours=colours, cc_of={"p": "prague", "c": "cubic"})  # fmt: skip
    classes = pd.DataFrame([{"q": q, "b": b, "class": c, "p50_ms": 1.0, "p90_ms": 2.0, "p99_ms": 3.0, "p999_ms": 4.0,
                             "max_ms": 5.0, "count": 1000} for q in queues for b in buffers for c in ("L", "C")])  # fmt: skip
    ccdf = figures.quantile_ccdf_grid(classes, row="q", col="b", row_order=queues, col_order=buffers, col_labels=labels)
    bars = figures.flow_bars(
        pd.DataFrame([{"x": f"qdisc={q} · buffer={b}", "h": h, "v": v} for q in queues for b in buffers
                      for h, v in (("prague", 40.0), ("cubic", 1.0), ("prague", 44.0), ("cubic", 3.0))]),  # fmt: skip
        x="x", value="v", hue="h", colours=colours,
    )
    page = html_page("good", wrapped(lines, "lines") + wrapped(ccdf, "ccdf") + wrapped(bars, "bars"))
    result = probe_page(page, tmp_path)
    assert problems(result, [labels]) == []
    assert all(ax["xticks"] for f in result["figures"] for ax in f["axes"])  # measured, not vacuous
    assert len(result["figures"][1]["axes"]) == len(queues) * len(buffers)


PARTIAL = prague_vs_cubic("verdict-partial", 4, 5, "1s", labels=None,
                          factors={"bottleneck.qdisc": ["dualpi2 target 5ms", "bfifo"], "bottleneck.buffer": ["1bdp", "4bdp"]})


@requires_engine
def test_report_says_incomplete_for_every_queue_with_1_of_5_trials(tmp_path):
    pytest.importorskip("l4slab._core")
    (tmp_path / "study.toml").write_text(PARTIAL)
    out = tmp_path / "out"

    def l4slab(*args):
        done = cli_here(*args, cwd=REPO)
        assert done.returncode == 0, done.stderr
        return done

    l4slab("study", "run", str(tmp_path / "study.toml"), "--out", str(out), "--emit-jobs", str(tmp_path / "jobs"))
    plan = json.loads((out / "plan.json").read_text())
    first = [run["id"] for run in plan["runs"] if run["trial"] == 0]
    assert len(first) == 4 and len(plan["runs"]) == 20
    for rid in first:  # trial 0 of every point: 1 of 5 trials done
        l4slab("study", "run-one", str(out), rid)
    l4slab("study", "report", str(out))
    markdown = (out / "report" / "report.md").read_text(encoding="utf-8")
    section = markdown.split("## Adopt L4S here?", 1)[1].split("\n## ", 1)[0]
    rows = [r for r in section.splitlines() if r.startswith("| ") and "---" not in r][1:]
    assert [r.split("|")[1].strip() for r in rows] == ["dualpi2 target 5ms", "bfifo"]  # the study's order
    for row in rows:
        assert "| incomplete |" in row and "2 of 10 runs of this queue's points done" in row, row
    assert "✔" not in section.split("|---|", 1)[1] and "✘" not in section.split("|---|", 1)[1]
