"""`snapbench report`: a run directory built from the demo's real pipeline (toy encoder, bundled
photos) -> HTML, paper tables, figures, per-query tables.  Numbers in the tables are checked against
values recomputed here from the score matrices and the reports' per-condition values."""

from __future__ import annotations

import html
import json
import math
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from snapbench.core.conditions import IMAGE_PRIMITIVES, condition_to_filename, filename_to_condition
from snapbench.core.install_hint import install_hint

REPO = Path(__file__).resolve().parents[1]
MODES = ("I2I", "T2T", "IT2IT")


def _hit1(scores: np.ndarray, positives: list[set[int]]) -> np.ndarray:
    """Per-query hit@1, ties to the lowest gallery index (np.argmax's first maximum); NaN for zero-GT."""
    top = np.argmax(scores, axis=1)
    return np.array([float(int(t) in pos) if pos else np.nan for t, pos in zip(top, positives)])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from snapbench.app.corrupt import run_corruption
    from snapbench.app.encode import encode_corrupted
    from snapbench.app.evaluate import evaluate_directory
    from snapbench.app.moor import fuse_directory
    from snapbench.evaluate import EvaluationConfig
    from snapbench.fusion import MOORIndex, comb_sum
    from snapbench.models import get_encoder
    from snapbench.store.perquery import write_per_query
    from snapbench.store.rundir import write_report

    base = tmp_path_factory.mktemp("report")
    demo_out = base / "demo"
    # the step-by-step route on the bundled set: PNG variants -> toy embeddings and paths -> MOOR scores
    data = REPO / "snapbench" / "assets" / "demo"
    run_corruption(data / "queries.jsonl", demo_out / "corrupted", seed=3, joint=True, progress=False)
    encode_corrupted(demo_out / "corrupted", data / "gallery.jsonl", get_encoder("toy"), demo_out / "encoded")
    fuse_directory(demo_out / "moor", embeddings_dir=demo_out / "encoded" / "embeddings")
    run = base / "run"
    qrels = REPO / "snapbench" / "assets" / "demo" / "qrels.json"
    paths = demo_out / "encoded" / "paths"
    cfg = EvaluationConfig(seed=3, resamples=200, workers=1)
    qids = (paths.parent / "query_ids.txt").read_text().split()
    gids = (paths.parent / "gallery_ids.txt").read_text().split()
    gpos = {g: i for i, g in enumerate(gids)}
    qr = json.loads(qrels.read_text())
    positives = [{gpos[g] for g in qr.get(q, []) if g in gpos} for q in qids]
    conds = sorted({filename_to_condition(p.name.split(".")[0]) for p in paths.glob("*.II.npy")})

    def mode_scores(c: str, mode: str) -> np.ndarray:
        ld = lambda p: np.load(paths / f"{condition_to_filename(c)}.{p}.npy")
        return {"I2I": lambda: ld("II"), "T2T": lambda: ld("TT"), "IT2IT": lambda: (ld("II") + ld("TT")) / 2}[mode]()

    for mode in MODES:
        write_report(evaluate_directory(paths, qrels, cfg, mode=mode), run / mode / "report.json")
        write_per_query(run / mode / "per_query.csv", qids,
                        {c: {"hit@1": _hit1(mode_scores(c, mode), positives)} for c in conds})
    moor = demo_out / "moor"
    write_report(evaluate_directory(moor, qrels, cfg), run / "MOOR" / "report.json")
    write_per_query(run / "MOOR" / "per_query.csv", qids,
                    {c: {"hit@1": _hit1(np.load(moor / f"{condition_to_filename(c)}.npy"), positives)} for c in conds})
    emb = demo_out / "encoded" / "embeddings"
    index = MOORIndex().fit(np.load(emb / "gallery.image.npy"), np.load(emb / "gallery.text.npy"))
    share = {}
    for c in conds:
        s = condition_to_filename(c)
        share[c] = float(np.mean(index.query(np.load(emb / f"{s}.image.npy"), np.load(emb / f"{s}.text.npy")).text_share))
    (run / "MOOR" / "text_share.json").write_text(json.dumps(share))
    cs = run / "_scores_comb_sum"
    cs.mkdir()
    for name in ("query_ids.txt", "gallery_ids.txt"):
        shutil.copy(paths / name if (paths / name).exists() else paths.parent / name, cs / name)
    for c in conds:
        s = condition_to_filename(c)
        np.save(cs / f"{s}.npy", comb_sum([np.load(paths / f"{s}.{p}.npy") for p in ("II", "TT", "IT", "TI")]))
    write_report(evaluate_directory(cs, qrels, cfg), run / "fusion" / "comb_sum" / "report.json")
    shutil.rmtree(cs)
    manifest = [json.loads(line) for line in (REPO / "snapbench" / "assets" / "demo" / "queries.jsonl").read_text().splitlines() if line]
    q0 = manifest[0]
    (run / "run.json").write_text(json.dumps({
        "dataset": "demo & friends_1 (toy)", "encoder": "toy", "seed": 3, "modes": list(MODES) + ["MOOR"],
        "conditions": conds, "snapbench_version": "0.1.0",
        "contact_sheet": {"image": str(REPO / "snapbench" / "assets" / "demo" / q0["image"]), "key": q0["id"], "seed": 3,
                          "question": q0["question"], "entity": q0.get("entity")}}))
    return {"dir": run, "qids": qids, "positives": positives, "conds": conds, "mode_scores": mode_scores}


@pytest.fixture(scope="module")
def built(run_dir):
    from snapbench.render import build_report

    res = build_report(run_dir["dir"], dpi=60)
    return res


@pytest.mark.slow
def test_build_writes_all_outputs(run_dir, built):
    d = run_dir["dir"]
    assert (d / "report.html").is_file()
    for mode in MODES + ("MOOR",):
        for kind in ("delta", "additivity", "r1"):
            assert (d / "tables" / f"{mode}_{kind}.md").is_file()
            assert (d / "tables" / f"{mode}_{kind}.tex").is_file()
        for fig in ("severity_curves", "primitives", "additivity"):
            assert (d / "figures" / f"{mode}_{fig}.png").stat().st_size > 1000
            assert (d / "figures" / f"{mode}_{fig}.pdf").read_bytes()[:5] == b"%PDF-"
    for fig in ("modes_severity", "drag", "moor_gain", "text_share", "contact_sheet"):
        assert (d / "figures" / f"{fig}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (d / "per_query.csv").is_file() and (d / "per_query.parquet").is_file()
    assert "per_query" not in built.notes and "figures" not in built.notes


# ---------------------------------------------------------------- table parsing (independent of the code)

_NUM = r"([+-]?\d+\.\d)"
_MD_CELL = re.compile(rf"^{_NUM}(?: \[{_NUM}, {_NUM}\])?$")
_TEX_CELL = re.compile(rf"^\${_NUM}\$(?: {{\\footnotesize \$\[{_NUM}, {_NUM}\]\$}})?$")


def _md_rows(path: Path) -> dict[str, list[str]]:
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") and not line.startswith("| **"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows.setdefault(cells[0], cells[1:])
    return rows


def _tex_rows(path: Path) -> dict[str, list[str]]:
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.endswith(r"\\") and not line.startswith((r"\multicolumn", "%")):
            cells = [c.strip() for c in line[:-2].split(" & ")]
            rows.setdefault(cells[0].replace(r"\_", "_"), cells[1:])
    return rows


def _parse(cell: str, pattern=_MD_CELL):
    m = pattern.match(cell)
    assert m, f"cell {cell!r} is not a number with an optional CI"
    v = float(m.group(1))
    ci = (float(m.group(2)), float(m.group(3))) if m.group(2) else None
    return v, ci


def _close(shown: float, exact: float) -> bool:
    return abs(shown - round(100 * exact, 1)) < 0.051 or abs(shown - 100 * exact) <= 0.05 + 1e-9


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_delta_tables_match_hit1_recomputed_from_scores(run_dir, built, mode):
    d = run_dir["dir"]
    rep = json.loads((d / mode / "report.json").read_text())
    hit = {c: float(np.nanmean(_hit1(run_dir["mode_scores"](c, mode), run_dir["positives"]))) for c in run_dir["conds"]}
    md, tex = _md_rows(d / "tables" / f"{mode}_delta.md"), _tex_rows(d / "tables" / f"{mode}_delta.tex")
    ops = [op for ops in IMAGE_PRIMITIVES.values() for op in ops]
    assert [r for r in md if r in ops] == ops  # the paper's order, grouped by primitive
    for op in ops:
        for j, s in enumerate((1, 2, 3)):
            c = f"img/{op}/s{s}"
            v, ci = _parse(md[op][j])
            assert _close(v, hit[c] - hit["clean"]), (mode, c, v)
            assert ci is not None and _close(ci[0], rep["paired"][c]["hit@1"]["ci"][0])
            vt, cit = _parse(tex[op][j], _TEX_CELL)
            assert (vt, cit) == (v, ci)
        assert md[op][3] == rep["severity_curves"][op]["hit@1"]["label"]
    for op in ("char_add", "word_swap", "sent_replace"):
        v, _ = _parse(md[op][0])
        assert _close(v, hit[f"txt/{op}"] - hit["clean"])
        assert tex[op][0].startswith(r"\multicolumn{3}{c}{$")


@pytest.mark.slow
@pytest.mark.parametrize("mode", ("IT2IT", "T2T"))
def test_additivity_table_matches_formula(run_dir, built, mode):
    """Exp = Δ_I + Δ_T, Obs, δ = Obs − Exp (drops), recomputed from hit@1 of the four states."""
    d = run_dir["dir"]
    hit = {c: float(np.nanmean(_hit1(run_dir["mode_scores"](c, mode), run_dir["positives"]))) for c in run_dir["conds"]}
    text = (d / "tables" / f"{mode}_additivity.md").read_text(encoding="utf-8")
    pairs = {"C+C compression+char_add": ("compression", "char_add"), "R+S rotation+sent_replace": ("rotation", "sent_replace"),
             "L+W low_light+word_swap": ("low_light", "word_swap")}
    checked = 0
    for header, (i, t) in pairs.items():
        block = text.split(f"| **{header}** |")[1].split("| **")[0]
        for s in (1, 2, 3):
            line = next(ln for ln in block.splitlines() if ln.startswith(f"| s{s} |"))
            exp_, obs_, dl = [c.strip() for c in line.strip().strip("|").split("|")][1:]
            d_i, d_t = hit["clean"] - hit[f"img/{i}/s{s}"], hit["clean"] - hit[f"txt/{t}"]
            obs = hit["clean"] - hit[f"joint/{i}+{t}/s{s}"]
            assert _close(_parse(exp_)[0], d_i + d_t)
            assert _close(_parse(obs_)[0], obs)
            assert _close(_parse(dl)[0], obs - d_i - d_t)
            checked += 1
    assert checked == 9


@pytest.mark.slow
def test_latex_fragments_are_booktabs_and_escaped(run_dir, built):
    from snapbench.render.tables import tex_escape

    assert tex_escape(r"a_b & 50% $x$ #1 {y} ~^\ ") == (
        r"a\_b \& 50\% \$x\$ \#1 \{y\} \textasciitilde{}\textasciicircum{}\textbackslash{} ")
    for tex in (run_dir["dir"] / "tables").glob("*.tex"):
        body = "\n".join(ln for ln in tex.read_text(encoding="utf-8").splitlines() if not ln.startswith("%"))
        assert body.index(r"\toprule") < body.index(r"\midrule") < body.index(r"\bottomrule"), tex
        assert body.count("{") == body.count("}"), tex
        # no unescaped specials outside math: drop math spans and escaped chars, then look
        plain = re.sub(r"\$[^$]*\$", "", body.replace(r"\_", "").replace(r"\%", "").replace(r"\&", ""))
        assert "_" not in plain and "%" not in plain, tex
        ncols = len(re.search(r"\\begin\{tabular\}\{([lrc]+)\}", body).group(1))
        for line in body.splitlines():
            if line.endswith(r"\\") and not line.startswith(r"\multicolumn{" + str(ncols)):
                spans = sum(int(n) - 1 for n in re.findall(r"\\multicolumn\{(\d+)\}", line))
                assert line.count(" & ") + 1 + spans == ncols, (tex, line)


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("pdflatex"), reason="no pdflatex: LaTeX compile check skipped")
def test_latex_fragments_compile(run_dir, built, tmp_path):
    inputs = "\n".join(rf"\input{{{p.as_posix()}}}\par" for p in sorted((run_dir["dir"] / "tables").glob("*.tex")))
    doc = tmp_path / "doc.tex"
    doc.write_text("\\documentclass{article}\\usepackage{booktabs}\\usepackage[margin=1cm,a3paper]{geometry}"
                   f"\\begin{{document}}\n{inputs}\n\\end{{document}}\n")
    r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name], cwd=tmp_path,
                       check=False, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:]


@pytest.mark.slow
def test_summary_table_matches_report_values(run_dir, built):
    rows = _md_rows(run_dir["dir"] / "tables" / "summary.md")
    for mode, label in (("I2I", "I→I"), ("IT2IT", "IT→IT"), ("MOOR", "MOOR")):
        conds = json.loads((run_dir["dir"] / mode / "report.json").read_text())["conditions"]
        img = [v["hit@1"] for c, v in conds.items() if c.startswith("img/")]
        assert _close(_parse(rows[label][0])[0], conds["clean"]["hit@1"])
        assert _close(_parse(rows[label][1])[0], sum(img) / len(img))
        assert _close(_parse(rows[label][4])[0], sum(img) / len(img) - conds["clean"]["hit@1"])
    assert "fusion: comb_sum" in rows


@pytest.mark.slow
def test_findings_numbers(run_dir, built):
    finds = {f["id"]: f for f in json.loads((run_dir["dir"] / "findings.json").read_text())}
    conds = json.loads((run_dir["dir"] / "IT2IT" / "report.json").read_text())["conditions"]
    clean = conds["clean"]["hit@1"]
    img = [v["hit@1"] - clean for c, v in conds.items() if c.startswith("img/")]
    txt = [v["hit@1"] - clean for c, v in conds.items() if c.startswith("txt/")]
    v = finds["image_vs_text"]["values"]
    assert math.isclose(v["mean_delta_image"], sum(img) / len(img), abs_tol=1e-12)
    assert math.isclose(v["mean_delta_text"], sum(txt) / len(txt), abs_tol=1e-12)
    s3 = {p: np.mean([conds[f"img/{op}/s3"]["hit@1"] - clean for op in ops]) for p, ops in IMAGE_PRIMITIVES.items()}
    assert finds["primitive_top_severity"]["values"]["worst"] == min(s3, key=s3.get)
    moor = json.loads((run_dir["dir"] / "MOOR" / "report.json").read_text())["conditions"]
    gain = np.mean([moor[c]["hit@1"] - conds[c]["hit@1"] for c in conds])
    assert math.isclose(finds["moor"]["values"]["mean_gain"], gain, abs_tol=1e-12)
    assert f"{100 * gain:+.1f}" in finds["moor"]["text"]
    share = json.loads((run_dir["dir"] / "MOOR" / "text_share.json").read_text())
    assert math.isclose(finds["text_share"]["values"]["clean"], share["clean"])


# ---------------------------------------------------------------- per-query tables

def test_per_query_roundtrip_exact(tmp_path):
    from snapbench.core.errors import InputError
    from snapbench.store.perquery import read_per_query, write_per_query

    rng = np.random.default_rng(7)
    vals = {"clean": {"hit@1": np.array([1.0, 0.0, np.nan]), "ndcg@10": rng.random(3)},
            "img/mosaic/s3": {"hit@1": np.array([0.0, 0.0, 1.0])}}
    p = tmp_path / "pq.csv"
    write_per_query(p, ["q,1", "q2", "ü3"], vals)
    assert p.read_text(encoding="utf-8").splitlines()[0] == "query_id,condition,metric,value"
    qids, back = read_per_query(p)
    assert qids == ["q,1", "q2", "ü3"]
    for c, per in vals.items():
        for m, a in per.items():
            np.testing.assert_array_equal(back[c][m], a)  # bit-identical, NaN where NaN
    with pytest.raises(InputError, match="2 entries for 3 query ids"):
        write_per_query(tmp_path / "bad.csv", ["a", "b", "c"], {"clean": {"hit@1": np.zeros(2)}})
    bad = tmp_path / "bad2.csv"
    bad.write_text("query_id,condition,metric,value\nq1,clean,hit@1,zero\n")
    with pytest.raises(InputError, match=r"bad2\.csv: line 2: value 'zero'"):
        read_per_query(bad)
    bad.write_text("id,condition,metric,value\n")
    with pytest.raises(InputError, match="header"):
        read_per_query(bad)


@pytest.mark.slow
def test_combined_per_query_csv_and_parquet(run_dir, built):
    import csv

    import pyarrow.parquet as pq

    d = run_dir["dir"]
    with open(d / "per_query.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert set(rows[0]) == {"mode", "query_id", "condition", "metric", "value"}
    assert {r["mode"] for r in rows} == set(MODES) | {"MOOR"}
    nq, nc = len(run_dir["qids"]), len(run_dir["conds"])
    assert len(rows) == 4 * nq * nc
    table = pq.read_table(d / "per_query.parquet").to_pydict()
    assert table["mode"] == [r["mode"] for r in rows] and table["query_id"] == [r["query_id"] for r in rows]
    csv_vals = np.array([float(r["value"]) if r["value"] else np.nan for r in rows])
    np.testing.assert_array_equal(np.array(table["value"], dtype=float), csv_vals)
    # the mean of the per-query values is the report's value (zero-GT queries are NaN and excluded)
    rep = json.loads((d / "IT2IT" / "report.json").read_text())["conditions"]
    for cond in ("clean", "img/low_light/s2", "joint/rotation+sent_replace/s3"):
        v = [float(r["value"]) for r in rows if r["mode"] == "IT2IT" and r["condition"] == cond and r["value"]]
        assert math.isclose(sum(v) / len(v), rep[cond]["hit@1"], abs_tol=1e-12)
        assert len(v) == nq - 1  # one zero-GT query in the demo


# ---------------------------------------------------------------- HTML

@pytest.mark.slow
def test_html_inlines_every_figure_and_nothing_external(run_dir, built):
    import base64

    d = run_dir["dir"]
    page = (d / "report.html").read_text(encoding="utf-8")
    pngs = sorted((d / "figures").glob("*.png"))
    assert len(pngs) == 3 * 4 + 5
    for p in pngs:
        m = re.search(rf'<figure id="fig-{re.escape(p.stem)}"[^>]*><img [^>]*src="data:image/png;base64,([^"]+)"', page)
        assert m, p.stem
        assert base64.b64decode(m.group(1)) == p.read_bytes()
        assert (d / "figures" / f"{p.stem}.pdf").is_file() or p.stem == "contact_sheet"
    assert len(re.findall(r"<img ", page)) == len(pngs)
    assert not re.search(r"""(src|href)\s*=\s*["'](https?:|//|file:)|<link\b|@import|url\(""", page, re.IGNORECASE)
    for text in ("demo &amp; friends_1 (toy)", "11 of 12 queries count (1 has no relevant item)", "200 resamples"):
        assert text in page
    for mode in MODES:
        assert f'id="table-{mode}_delta"' in page and f'id="table-{mode}_additivity"' in page


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _headless(exe: str, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args],
            check=False, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="chromium not installed (apt-get install chromium): headless check skipped")
def test_html_opens_in_headless_chromium(run_dir, built, tmp_path):
    page = (run_dir["dir"] / "report.html").resolve()
    n_fig = len(list((run_dir["dir"] / "figures").glob("*.png")))
    r = _headless(_chromium(), "--dump-dom", page.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r'<body[^>]*data-images-ok="(\d+)/(\d+)"', r.stdout)
    assert m, "the page's load check did not run: " + r.stdout[:500]
    assert (int(m.group(1)), int(m.group(2))) == (n_fig, n_fig)
    console = [ln for ln in r.stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]
    assert not console, console
    shot = tmp_path / "shot.png"
    r = _headless(_chromium(), "--window-size=1280,2400", f"--screenshot={shot}", page.as_uri())
    from PIL import Image

    img = np.asarray(Image.open(shot).convert("L"))
    assert img.shape == (2400, 1280) and img.std() > 10  # something is drawn, not a blank page


@pytest.mark.slow
@pytest.mark.skipif(_chromium() is None, reason="chromium not installed: headless check skipped")
def test_headless_check_catches_a_broken_image(run_dir, built, tmp_path):
    """The same check on a copy with one image corrupted must fail: the test can fail."""
    page = (run_dir["dir"] / "report.html").read_text(encoding="utf-8")
    broken = re.sub(r'(id="img-drag" [^>]*src="data:image/png;base64,)[^"]+', r"\1AAAA", page, count=1)
    assert broken != page
    p = tmp_path / "broken.html"
    p.write_text(broken, encoding="utf-8")
    r = _headless(_chromium(), "--dump-dom", p.as_uri())
    m = re.search(r'data-images-ok="(\d+)/(\d+)"', r.stdout)
    assert m and int(m.group(1)) == int(m.group(2)) - 1
    assert any("did not decode: img-drag" in ln for ln in r.stderr.splitlines())


# ---------------------------------------------------------------- degraded inputs and the command

@pytest.mark.slow
def test_minimal_run_dir_degrades_gracefully(run_dir, tmp_path):
    from snapbench.render import build_report

    d = tmp_path / "min"
    (d / "IT2IT").mkdir(parents=True)
    shutil.copy(run_dir["dir"] / "IT2IT" / "report.json", d / "IT2IT" / "report.json")
    (d / "T2T").mkdir()
    (d / "T2T" / "report.json").write_text("{not json")
    res = build_report(d, formats=["html", "md", "csv", "png"], dpi=50)
    page = (d / "report.html").read_text(encoding="utf-8")
    assert "text_share.json not found" in page
    assert "no contact sheet" in page
    assert "T2T/report.json: unreadable" in page
    assert "no &lt;MODE&gt;/per_query.csv" in page
    assert "MOOR gain: needs both" in page
    assert not (d / "per_query.csv").exists() and (d / "tables" / "IT2IT_delta.md").is_file()
    assert "IT2IT_severity_curves" in res.figures and "moor_gain" not in res.figures
    assert not list(d.glob("**/*.pdf"))  # not asked for


def test_no_report_is_an_error(tmp_path):
    from snapbench.core.errors import InputError
    from snapbench.render import build_report

    with pytest.raises(InputError, match="holds no <MODE>/report.json: not a snapbench run directory"):
        build_report(tmp_path)
    with pytest.raises(InputError, match="no such folder"):
        build_report(tmp_path / "nope")


@pytest.mark.slow
def test_without_matplotlib_and_pyarrow(run_dir, tmp_path, monkeypatch):
    import sys

    from snapbench.render import build_report

    d = tmp_path / "r"
    shutil.copytree(run_dir["dir"] / "IT2IT", d / "IT2IT", ignore=shutil.ignore_patterns("*.png", "*.pdf"))
    # an import of a module mapped to None fails: as if neither extra were installed
    for name in [m for m in sys.modules if m.split(".")[0] in ("matplotlib", "pyarrow")] + ["matplotlib", "pyarrow"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "snapbench.render.figures", raising=False)
    res = build_report(d)
    assert any(install_hint("report") in n for n in res.notes["figures"])
    assert any("pyarrow is not installed" in n for n in res.notes["per_query"])
    assert (d / "per_query.csv").is_file() and not (d / "per_query.parquet").exists()
    assert html.escape(install_hint("report")) in (d / "report.html").read_text(encoding="utf-8")
    assert not (d / "figures").exists()


@pytest.mark.slow
def test_report_command(run_dir, tmp_path):
    import typer
    from typer.testing import CliRunner

    from snapbench.cli import guarded, report

    app = typer.Typer()
    app.command("report")(guarded(report))  # as cli.py registers it
    app.command("other")(lambda: None)  # two commands: typer keeps `report` as a subcommand name
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["report", str(run_dir["dir"]), "--out", str(out), "--formats", "md,tex,csv", "--dpi", "50"])
    assert r.exit_code == 0, r.output
    assert (out / "tables" / "MOOR_delta.tex").is_file() and (out / "per_query.csv").is_file()
    assert not (out / "report.html").exists() and not (out / "figures").exists()  # only what was asked for
    r = CliRunner().invoke(app, ["report", str(run_dir["dir"]), "--out", str(out), "--formats", "html,docx"])
    assert r.exit_code == 2 and "error: --formats: unknown report format 'docx'; known: html, md, tex, csv, parquet, png, pdf" in r.output
    r = CliRunner().invoke(app, ["report", str(tmp_path / "nothing")])
    assert r.exit_code == 2 and "nothing: no such folder" in r.output


@pytest.mark.slow
def test_figures_plot_the_report_numbers(run_dir):
    """The plotted data (read back from the matplotlib artists) are the numbers of the report."""
    from snapbench.render.figures import severity_curves_figure, text_share_figure
    from snapbench.store.rundir import read_report

    rep = json.loads((run_dir["dir"] / "IT2IT" / "report.json").read_text())
    conds = rep["conditions"]
    fig = severity_curves_figure(read_report(run_dir["dir"] / "IT2IT" / "report.json"), "IT2IT")
    seen = 0
    for ax in fig.axes:
        for line in ax.get_lines():
            label = line.get_label()
            if "(" not in label:
                continue
            op, kind = label.split(" (")
            assert kind.rstrip(")") == rep["severity_curves"][op]["hit@1"]["label"]
            want = [0.0] + [100 * (conds[f"img/{op}/s{s}"]["hit@1"] - conds["clean"]["hit@1"]) for s in (1, 2, 3)]
            np.testing.assert_allclose(line.get_ydata(), want, atol=1e-9)
            seen += 1
    assert seen == 15
    share = json.loads((run_dir["dir"] / "MOOR" / "text_share.json").read_text())
    ax = text_share_figure(share).axes[0]
    overall = next(ln for ln in ax.get_lines() if ln.get_label() == "all image operators")
    want = [share["clean"]] + [np.mean([v for c, v in share.items() if c.startswith("img/") and c.endswith(f"/s{s}")])
                               for s in (1, 2, 3)]
    np.testing.assert_allclose(overall.get_ydata(), want)


def _sparse_report() -> dict:
    """A report with only clean and one text condition and no CI (hit@1 0.5 -> 0.25 on 4 queries)."""
    from snapbench.evaluate import EvaluationConfig, Labels, evaluate_conditions, evaluate_matrix

    labels = Labels.from_lists([[0], [1], [2], [3]], 4)
    eye = np.eye(4)
    evals = {"clean": evaluate_matrix(eye[[0, 1, 3, 2]], labels, ["hit@1"]),
             "txt/char_add": evaluate_matrix(eye[[0, 0, 0, 0]], labels, ["hit@1"])}
    rep = evaluate_conditions(evals, labels, EvaluationConfig(metrics="hit@1", resamples=5, workers=1)).to_json()
    assert rep["conditions"] == {"clean": {"hit@1": 0.5}, "txt/char_add": {"hit@1": 0.25}}
    rep["paired"]["txt/char_add"]["hit@1"].update(ci=[None, None], p=None, p_raw=None)
    return rep


def test_sparse_hand_written_report(tmp_path):
    """A report with only clean and one text condition, no CI: tables and page still come out."""
    from snapbench.render import build_report

    d = tmp_path / "sparse"
    (d / "T2T").mkdir(parents=True)
    (d / "T2T" / "report.json").write_text(json.dumps(_sparse_report()))
    (d / "run.json").write_text(json.dumps({"dataset": "x", "modes": ["T2T", "I2I"]}))
    res = build_report(d, dpi=50)
    rows = _md_rows(d / "tables" / "T2T_delta.md")
    assert rows["char_add"][0] == "-25.0"
    page = (d / "report.html").read_text(encoding="utf-8")
    assert "lists mode &#x27;I2I&#x27; but" in page
    assert "T2T_severity_curves" not in res.figures  # no image operator: no curve, no crash


# ---------------------------------------------------------------- the report says only what the data supports

def _run_data(run_dir):
    from snapbench.store.rundir import load_run_dir

    return load_run_dir(run_dir["dir"])


def _finding(data, fid: str) -> str:
    from snapbench.render import compute_findings

    return next(f.text for f in compute_findings(data) if f.id == fid)


@pytest.mark.slow
def test_findings_make_a_claim_only_when_its_ci_excludes_zero(run_dir):
    from snapbench.core.records import Additivity, CoarseTextDrag

    data = _run_data(run_dir)
    rep = data.reports["IT2IT"]
    for ci, want in (((-0.02, 0.12), "not distinguishable from additive on average"),
                     ((0.01, 0.12), "super-additive on average"), ((None, None), "of unknown additivity (no CI)")):
        rep.additivity_summary.mean["hit@1"] = Additivity(0.02, 0.03, 0.05, 0.1, 0.05, ci, 18)
        text = _finding(data, "additivity")
        assert want in text, text
        if want != "super-additive on average":
            assert "super-additive on average" not in text
    for ci, want in (((-0.2, 0.05), "is not distinguishable from image-only I→I's (drag -10.0"),
                     ((-0.2, -0.01), "is below image-only I→I by 10.0 points")):
        rep.coarse_text_drag = CoarseTextDrag("hit@1", -0.1, ci, "IT2IT", 0.8, 0.9)
        assert want in _finding(data, "drag")
    # without per-query values there is no CI of a comparison: numbers, no verdict
    data.per_query.clear()
    moor, ivt = _finding(data, "moor"), _finding(data, "image_vs_text")
    assert "better" not in moor and "worse" not in moor and "(no CI: needs per_query.csv)" in moor
    assert "higher in" in moor and "point estimates" in moor
    assert "hurt more" not in ivt and "no CI: needs per_query.csv" in ivt


@pytest.mark.slow
def test_findings_with_per_query_values_state_the_ci_of_comparisons(run_dir, built):
    finds = {f["id"]: f for f in json.loads((run_dir["dir"] / "findings.json").read_text())}
    ivt, moor = finds["image_vs_text"], finds["moor"]
    lo, hi = ivt["values"]["ci"]
    assert lo <= ivt["values"]["difference"] <= hi
    assert ("hurt more" in ivt["text"]) == (lo > 0 or hi < 0)
    assert ("not distinguishable" in ivt["text"]) == (lo <= 0 <= hi)
    lo, hi = moor["values"]["ci"]
    assert ("not distinguishable from it" in moor["text"]) == (lo <= 0 <= hi)
    assert "by 95% CIs" in moor["text"]


def test_no_negative_zero_in_tables_or_figures():
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from snapbench.core.records import Additivity, Report
    from snapbench.render.figures import additivity_heatmap_figure
    from snapbench.render.fmt import pct, points
    from snapbench.render.tables import Cell, additivity_table

    assert (points(-1e-18), points(-4e-4, signed=True), pct(-0.0), points(-0.00049)) == ("0.0", "+0.0", "0.0", "0.0")
    assert Cell(-1e-17, (-1e-17, 0.0), signed=True).md() == "+0.0 [+0.0, +0.0]"
    rep = Report.from_json(_sparse_report())
    tiny = Additivity(-1e-17, 0.0, -1e-17, -2e-17, -1e-17, (-2e-17, 0.0))
    rep.additivity = {f"joint/mosaic+sent_add/s{s}": {"hit@1": tiny} for s in (1, 2)}
    fig = additivity_heatmap_figure(rep, "MOOR")
    FigureCanvasAgg(fig).draw()
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts and not any("-0.0" in t or "−0.0" in t for t in texts), texts
    md = additivity_table(rep, "MOOR").to_markdown()
    assert "-0.0" not in md and "+0.0" in md


def test_a_flat_curve_has_no_axis_offset():
    """Float noise around 0 (-2.8e-19 here, as a T→T curve of image operators has) is plotted as 0 on a
    readable axis: no '1e-17' offset."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from snapbench.core.records import Paired, Report
    from snapbench.render.figures import severity_curves_figure

    rep = Report.from_json(_sparse_report())
    noise = -2.7755575615628914e-19
    for s in (1, 2, 3):
        rep.conditions[f"img/mosaic/s{s}"] = {"hit@1": 0.5}
        rep.paired[f"img/mosaic/s{s}"] = {"hit@1": Paired(noise, (noise, 0.0), 1.0, 1.0)}
    fig = severity_curves_figure(rep, "T2T")
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    assert ax.yaxis.get_offset_text().get_text() == ""
    assert ax.get_ylim() == (-1.0, 1.0)


@pytest.mark.slow
def test_moor_gain_labels_are_few_and_readable(run_dir):
    from snapbench.render.figures import moor_gain_figure

    fig = moor_gain_figure(_run_data(run_dir))
    labels = [t for ax in fig.axes for t in ax.get_xticklabels() if t.get_text()]
    assert len(labels) == 1 + 15 + 8 + 6  # clean, image operators, text operators, joint pairs (72 conditions)
    assert min(t.get_fontsize() for t in labels) >= 8
    assert fig.get_figwidth() * 120 <= 1800  # shown at most ~1.5x reduced on the 1180 px page


@pytest.mark.slow
def test_evaluate_lists_the_conditions_of_a_run_in_the_runs_order(run_dir):
    """`evaluate` of the scores of a default run (corrupt --joint, encode) lists the conditions as the run
    planned them (its run.json), which is the 72 ids of the spec in order, joint pairs as the paper has them."""
    from snapbench.core.conditions import JOINT_PAIRS

    planned = json.loads((run_dir["dir"].parent / "demo" / "corrupted" / "run.json").read_text())["conditions"]
    assert planned[:2] == ["clean", "img/low_light/s1"] and len(planned) == 72
    assert [c for c in planned if c.startswith("joint/")] == [f"joint/{i}+{t}/s{s}" for i, t in JOINT_PAIRS
                                                              for s in (1, 2, 3)]
    for target in (*MODES, "MOOR", "fusion/comb_sum"):
        assert list(json.loads((run_dir["dir"] / target / "report.json").read_text())["conditions"]) == planned, target


@pytest.mark.slow
def test_tables_state_their_sign_convention(run_dir, built):
    delta = (run_dir["dir"] / "tables" / "IT2IT_delta.md").read_text(encoding="utf-8")
    add = (run_dir["dir"] / "tables" / "IT2IT_additivity.md").read_text(encoding="utf-8")
    assert "Δ = condition − clean, negative = worse" in delta.splitlines()[0]
    assert "drops = clean − condition, positive = worse" in add.splitlines()[0]
    assert "| Pair / severity | Exp drop | Obs drop | δ [95% CI] |" in add


@pytest.mark.slow
def test_reading_a_runs_per_query_table_is_one_function(run_dir):
    from snapbench.store.rundir import read_report, read_target_per_query

    pq = read_target_per_query(run_dir["dir"], "IT2IT")
    rep = read_report(run_dir["dir"] / "IT2IT" / "report.json")
    assert pq.query_ids == run_dir["qids"]
    for c in ("clean", "img/low_light/s3"):
        assert float(np.nanmean(pq.array(c, "hit@1"))) == pytest.approx(rep.value(c, "hit@1"), abs=1e-12)
    assert read_target_per_query(run_dir["dir"], "fusion/comb_sum") is None  # the run has none


@pytest.mark.slow
def test_severity_and_primitive_findings_claim_an_order_only_when_its_ci_excludes_zero(run_dir):
    import dataclasses

    from snapbench.core.conditions import IMAGE_PRIMITIVES, parse_condition

    data = _run_data(run_dir)
    rep, pq = data.reports["IT2IT"], data.per_query["IT2IT"]
    finds = {f.id: f for f in __import__("snapbench.render", fromlist=["x"]).compute_findings(data)}
    steps = finds["severity"].values["steps"]
    assert steps, finds["severity"].text
    for st in steps:
        # the step's difference, recomputed from the per-query values, lies in its CI
        ops = [op for op in {parse_condition(c).image_operator for c in rep.paired if parse_condition(c).kind == "image"}]
        a = np.mean([pq.array(f"img/{op}/s{st['from']}", "hit@1") for op in ops], axis=0)
        b = np.mean([pq.array(f"img/{op}/s{st['to']}", "hit@1") for op in ops], axis=0)
        d = (b - a)[np.isfinite(b - a)]  # queries that count (zero-GT queries are NaN)
        assert st["ci"][0] <= float(np.mean(d)) <= st["ci"][1]
    every_step = all(st["ci"][1] < 0 for st in steps)
    assert ("grows with severity at every step" in finds["severity"].text) == every_step
    assert ("not shown to grow" in finds["severity"].text) == (not every_step)

    # every image condition exactly as clean: equal values read as equal, no growth, no order
    clean = pq.values["clean"]["hit@1"]
    for c in list(rep.paired):
        if parse_condition(c).kind == "image":
            pq.values[c]["hit@1"] = list(clean)
            rep.paired[c]["hit@1"] = dataclasses.replace(rep.paired[c]["hit@1"], delta=0.0)
    sev, prim = _finding(data, "severity"), _finding(data, "primitive_top_severity")
    assert "grows with severity" not in sev and "not shown to grow" in sev, sev
    assert "every primitive has the same mean ΔR@1 (+0.0 points)" in prim, prim
    assert "lowest" not in prim and "highest" not in prim

    # one primitive a little worse on one query: an order by point estimate, not distinguishable
    worst = next(iter(IMAGE_PRIMITIVES))
    for op in IMAGE_PRIMITIVES[worst]:
        c = f"img/{op}/s3"
        vals = list(clean)
        i = next(k for k, v in enumerate(vals) if v == 1.0)
        vals[i] = 0.0
        pq.values[c]["hit@1"] = vals
        rep.paired[c]["hit@1"] = dataclasses.replace(rep.paired[c]["hit@1"], delta=-1.0 / sum(v is not None for v in vals))
    prim = _finding(data, "primitive_top_severity")
    assert f"{worst.upper()} has the lowest" in prim and "not distinguishable" in prim, prim

    # without per-query values: numbers, no verdict on growth or order
    data.per_query.clear()
    sev, prim = _finding(data, "severity"), _finding(data, "primitive_top_severity")
    assert "no verdict on growth" in sev and "grows with" not in sev, sev
    assert "no CI for their difference" in prim, prim


@pytest.mark.slow
def test_the_drag_figure_shows_every_mode_in_its_legend_colour_even_at_zero(run_dir):
    from matplotlib.collections import LineCollection
    from matplotlib.colors import to_hex

    from snapbench.render.figures import drag_figure

    data = _run_data(run_dir)
    fig = drag_figure(data)
    ax = fig.axes[0]
    legend = {t.get_text(): h for t, h in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles)}
    drag_colour = to_hex(legend["IT→IT: the coarse-text drag"].get_facecolor())
    modes = [t.get_text() for t in ax.get_xticklabels()]
    lines = next(c for c in ax.collections if isinstance(c, LineCollection) and len(c.get_segments()) == len(modes))
    colours = [to_hex(c) for c in lines.get_colors()]
    assert [m for m, c in zip(modes, colours) if c == drag_colour] == ["IT→IT"]
    # the line marks the value whatever the bar's height (a zero bar has no visible area)
    values = [seg[0][1] for seg in lines.get_segments()]
    from snapbench.render.aggregate import mode_drags

    drags = mode_drags(data)
    assert values == pytest.approx([100 * drags[m]["value"] for m in drags])


@pytest.mark.parametrize("targets,first", [
    (("I2I", "T2T", "IT2IT", "I2IT", "T2IT", "MOOR"), "IT2IT"),  # the paper's joint mode
    (("T2T", "I2I", "MOOR"), "MOOR"),
    (("T2T", "I2I"), "I2I"),
    (("T2T", "T2IT", "I2IT"), "I2IT"),
    (("T2T",), "T2T"),
])
def test_a_runs_report_and_a_comparison_speak_first_of_the_same_target(targets, first):
    from snapbench.app.compare import ordered_targets
    from snapbench.store.rundir import RunData

    assert RunData(Path("run"), reports=dict.fromkeys(targets)).primary_mode == first
    assert ordered_targets(list(targets))[0] == first


@pytest.mark.slow
def test_every_ci_is_named_at_the_reports_own_level(run_dir, tmp_path):
    """Reports evaluated at a 90% level: tables, the summary, the findings and the traffic-free page say
    "90% CI" (the findings used to say 95% whatever the level), and the findings' own intervals are
    drawn at 90%: narrower than at 95%."""
    from snapbench.render import build_report, compute_findings
    from snapbench.store.rundir import load_run_dir

    d = tmp_path / "run90"
    shutil.copytree(run_dir["dir"], d, ignore=shutil.ignore_patterns("*.png", "*.pdf", "tables", "figures"))
    for f in d.glob("**/report.json"):
        rep = json.loads(f.read_text())
        rep["meta"]["ci_level"] = 0.9
        f.write_text(json.dumps(rep))
    build_report(d, formats=["md", "html"], dpi=50)
    tables = [f.read_text(encoding="utf-8") for f in (d / "tables").glob("*.md")]
    assert any("90% CI" in t for t in tables) and not any("95%" in t for t in tables)
    findings = json.loads((d / "findings.json").read_text())
    texts = " ".join(f["text"] for f in findings)
    assert "90% CI" in texts and "95%" not in texts
    page = (d / "report.html").read_text(encoding="utf-8")
    assert "200 resamples, 90% paired bootstrap" in page and "95%" not in page
    moor = {f.id: f.values for f in compute_findings(load_run_dir(d))}["moor"]
    at95 = {f.id: f.values for f in compute_findings(load_run_dir(run_dir["dir"]))}["moor"]
    assert moor["ci"][1] - moor["ci"][0] < at95["ci"][1] - at95["ci"][0]


@pytest.mark.parametrize("key,value,words", [
    ("resamples", None, "meta.resamples must be an integer >= 1, got None"),
    ("resamples", 0, "meta.resamples must be an integer >= 1, got 0"),
    ("seed", 1.5, "meta.seed must be an integer, got 1.5"),
    ("ci_level", None, "meta.ci_level must be in (0, 1), e.g. 0.95; got None"),
    ("ci_level", 95, "meta.ci_level must be in (0, 1), e.g. 0.95; got 95.0"),
])
def test_a_report_without_its_bootstrap_settings_is_refused_not_defaulted(tmp_path, key, value, words):
    """The report recomputes intervals with the report's seed, resamples and level; one that lacks them is
    refused naming the key (it used to fall back to 1000 resamples and 0.95, unlike evaluate's defaults)."""
    from snapbench.core.errors import InputError
    from snapbench.store.rundir import read_report

    rep = _sparse_report()
    rep["meta"][key] = value
    f = tmp_path / "report.json"
    f.write_text(json.dumps(rep))
    with pytest.raises(InputError, match=re.escape(words)) as err:
        read_report(f)
    assert err.value.path == str(f)


def test_every_legend_of_the_report_figures_lies_off_the_data(run_dir):
    # a legend inside the axes covers lines, CI bands or whiskers for some data: all sit beside the axes
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from snapbench.render import figures as plot

    data = _run_data(run_dir)
    rep = data.reports["IT2IT"]
    figs = {"severity_curves": plot.severity_curves_figure(rep, "IT2IT"), "primitives": plot.primitive_bars_figure(rep, "IT2IT"),
            "drag": plot.drag_figure(data), "modes_severity": plot.modes_severity_figure(data),
            "moor_gain": plot.moor_gain_figure(data)}
    checked = 0
    for name, fig in figs.items():
        if fig is None:
            continue
        FigureCanvasAgg(fig)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            leg = ax.get_legend()
            if leg is None or not ax.get_visible():
                continue
            box, area = leg.get_window_extent(renderer), ax.get_window_extent(renderer)
            assert box.x0 >= area.x1 - 1, (name, ax.get_title())  # right of the axes, not on them
            checked += 1
    assert checked >= 5


def _report_app():
    import typer

    from snapbench.cli import guarded, report

    app = typer.Typer()
    app.command("report")(guarded(report))  # as cli.py registers it
    app.command("other")(lambda: None)
    return app


@pytest.mark.slow
def test_an_invalid_run_json_is_refused_like_run_and_compare(run_dir, tmp_path):
    """run.json that exists but is not JSON: an error naming the file (exit 2), not a page saying
    "dataset not recorded (no run.json)"."""
    from typer.testing import CliRunner

    d = tmp_path / "bad"
    shutil.copytree(run_dir["dir"], d, ignore=shutil.ignore_patterns("*.png", "*.pdf", "report.html"))
    (d / "run.json").write_text("garbage{")
    r = CliRunner().invoke(_report_app(), ["report", str(d), "--formats", "md"])
    assert r.exit_code == 2 and "run.json: not valid JSON" in r.output, r.output
    (d / "run.json").write_text("[1, 2]")
    r = CliRunner().invoke(_report_app(), ["report", str(d), "--formats", "md"])
    assert r.exit_code == 2 and "run.json" in r.output and "object" in r.output, r.output


@pytest.mark.slow
def test_a_listed_mode_without_its_report_is_said_on_the_page_and_the_terminal(run_dir, tmp_path):
    from typer.testing import CliRunner

    d = tmp_path / "gone"
    shutil.copytree(run_dir["dir"], d, ignore=shutil.ignore_patterns("*.png", "*.pdf", "report.html"))
    (d / "I2I" / "report.json").unlink()
    r = CliRunner().invoke(_report_app(), ["report", str(d), "--formats", "html", "--dpi", "50"])
    assert r.exit_code == 0, r.output
    words = "run.json lists mode 'I2I' but"
    assert words in r.output and "I2I/report.json is missing" in r.output.replace("\n", "")
    assert html.escape(words) in (d / "report.html").read_text(encoding="utf-8")


def test_a_pdf_figure_is_the_same_bytes_whenever_it_is_drawn():
    """A resumed or repeated run writes its figures again: a PDF must not carry the time it was drawn
    (matplotlib writes /CreationDate unless told not to), so the same numbers give the same bytes."""
    pytest.importorskip("matplotlib")
    from snapbench.render.figures import fig_to_bytes, one_axes

    fig, ax = one_axes((2.0, 1.5))
    ax.plot([0, 1, 2], [3, 1, 2])
    pdf = fig_to_bytes(fig, "pdf", 60)
    assert pdf[:5] == b"%PDF-" and b"/CreationDate" not in pdf and b"snapbench report" in pdf
