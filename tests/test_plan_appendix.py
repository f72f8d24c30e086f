"""Appendix A1 (chapters/A1_plan.ipynb) and its tables (hgemm_course.course.plan_tables): every fitted constant with the
runs it came from, tables that show the launch the plan ran, and the appendix registered wherever chapters are."""
from __future__ import annotations

import re

import pytest

from hgemm_course.course import book_pages, book_results, book_site, plan_tables
from hgemm_course.library.paths import REPO_ROOT
from hgemm_course.library.plan import plan

needs_checkout = pytest.mark.skipif(REPO_ROOT is None, reason="installed from a wheel: no chapters/ or results/")


def test_every_constant_is_the_value_its_module_holds_and_is_listed():
    from importlib import import_module

    text = plan_tables.format_constants()
    for c in plan_tables.CONSTANTS:
        assert getattr(import_module(f"hgemm_course.{c.module}"), c.name) == c.value, c.name
        assert f"{c.module}.{c.name} = {c.value}  (" in text
    # the speeds and margins the plan weighs its choices with are all listed
    weighed = {"SMALL_TILE_SPEED", "SMALL_TILE_MARGIN", "SMALL_TILE_UNALIGNED_SPEED", "NARROW_TILE_SPEED",
               "NARROW_TILE_UNALIGNED_SPEED", "NARROW_SUPER_L2_SHARE", "LARGE_B_SUPER_MARGIN", "FITTED_SK_ITER_COST",
               "FITTED_FIXUP_ITERS", "DP_MARGIN", "ROW64_ITER_NS", "SPLIT_FIXUP_NS", "APART_NS", "APART_ITER_NS"}
    assert weighed <= {c.name for c in plan_tables.CONSTANTS}


@needs_checkout
def test_every_constant_names_tests_that_exist_and_every_fit_a_test_that_derives_it():
    """Each constant's tested_by names test functions that are in the tests; a fit's tests read a record of
    results/ (they derive the value from the runs, not only hold the plan to it)."""
    for c in plan_tables.CONSTANTS:
        assert c.tested_by, c.name
        for ref in c.tested_by:
            path, test = ref.split("::")
            source = (REPO_ROOT / path).read_text()
            assert re.search(rf"^def {test}\(", source, re.M), ref
        if c.kind == "fit":
            assert any("results" in (REPO_ROOT / ref.split("::")[0]).read_text() for ref in c.tested_by), c.name


def test_a_constant_of_an_unknown_kind_is_refused(tmp_path, monkeypatch):
    from hgemm_course.library import plan_constants

    bad = tmp_path / "plan_constants.toml"
    bad.write_text('[X]\nmodule = "library.plan"\nvalue = 1\nkind = "guess"\nsets = ""\nfrom = ""\n'
                   'evidence = ""\ntested_by = []\n')
    monkeypatch.setattr(plan_constants, "DATA", bad)
    plan_constants.constants.cache_clear()
    try:
        with pytest.raises(ValueError, match="X has kind 'guess'"):
            plan_constants.constants()
    finally:
        plan_constants.constants.cache_clear()


@needs_checkout
def test_the_runs_the_constants_cite_are_recorded():
    cited = re.findall(r"(?:results|research)/[\w./-]+\.(?:json|py)", plan_tables.format_constants())
    assert cited and all((REPO_ROOT / path).is_file() for path in cited), cited
    shorthands = re.findall(r"results/([\w/]+_nvidia-h200_20261201)T\d+\w*\.json and (T\d+\w*\.json)",
                            plan_tables.format_constants())
    assert shorthands
    for prefix, short in shorthands:
        assert (REPO_ROOT / "results" / f"{prefix}{short}").is_file(), short


def test_a_plans_launch_is_named_with_its_rung_and_arguments():
    assert plan_tables.launch_text(plan(7168, 7168, 2048, units=66)) == "rung 11 {'super_mn': (8, 2)}"
    assert plan_tables.parse_launch("rung 11 {'cluster_m': 1, 'tiles': '128x64', 'super_mn': (1, 1)}") == (
        "11", {"cluster_m": 1, "tiles": "128x64", "super_mn": (1, 1)})
    for shape, name in [((3072, 3072, 3072), "12 sk1"), ((4096, 4096, 4096), "11"), ((7168, 7168, 2048), "11 super 8x2"),
                        ((2176, 2944, 1024), "11 128x128 s4 no cluster super 1x1"),
                        ((1024, 1024, 1024), "11 128x64 s8 no cluster super 1x1")]:
        p = plan(*shape, units=66)
        assert plan_tables.probe_variant(p.rung, p.options_text()) == name
        assert plan_tables.probe_variant(*plan_tables.parse_launch(plan_tables.launch_text(p))) == name


@needs_checkout
def test_the_probe_names_are_the_probes():
    """Every name probe_variant gives a launch the plan ran in a probe, past one wave, is a variant of
    research/tile_probe.py, so the plan's launch and the probe's variant of it are matched."""
    source = (REPO_ROOT / "research" / "tile_probe.py").read_text()
    probes = sorted(p.name for p in (REPO_ROOT / plan_tables.TILE_PROBE_DIR).glob("tile_probe_*.json"))
    names = {plan_tables.probe_variant(*plan_tables.parse_launch(launch))
             for entry in plan_tables.probe_timings(*probes).values() for launch in entry["plan"]}
    one_wave = {name for name in names if name.startswith("11 no cluster super")}   # no probe variant of its own
    for name in names - one_wave:
        variant = re.sub(r"super \d+x\d+$", "super {m}x{n}", name)
        assert f'"{name}"' in source or f'"{variant}"' in source or name.startswith("11 128x64 s8 no cluster super"), name


@needs_checkout
def test_a_probe_table_shows_the_launch_the_plan_ran_and_the_one_it_runs_now():
    """At 7168 x 7168 x 2048 the super-tile probes timed the plan on rung 12 (before the plan took shorter super
    tiles) and on rung 11 with 8x2 super tiles; the table shows both as recorded, each with its own median."""
    names = ("tile_probe_nvidia-h200_20261201T180119_e5c91a.json", "tile_probe_nvidia-h200_20261201T180337_cacadf.json")
    rows = {r["shape"]: r for r in plan_tables.probe_rows(*names)}
    row = rows[7168, 7168, 2048]
    assert set(row["ran"]) == {"rung 12 {'sk_waves': 0}", "rung 11 {'super_mn': (8, 2)}"}
    assert row["plan_now"] == "rung 11 {'super_mn': (8, 2)}" and row["plan_now_pct"] is not None
    text = plan_tables.format_probe(*names)
    assert text.startswith("RECORDED on the NVIDIA H200 (")
    lines = [line for line in text.splitlines() if "7168x7168x2048" in line]
    assert lines and "rung 12 {'sk_waves': 0}" in lines[0]
    shown = text.splitlines()
    following = shown[shown.index(lines[0]) + 1]
    assert "rung 11 {'super_mn': (8, 2)}" in following and "this code's plan" not in following


@needs_checkout
def test_the_sweep_table_shows_the_plans_launch_and_gemms_own_timing_not_rung_11s():
    """The reviewer's row: 7168 x 7168 x 2048, where rung 11's own launch (16x2 super tiles) is not what the plan
    runs; the table names the plan's launch with its arguments and gives gemm()'s own timing beside it."""
    try:
        data = plan_tables.sweep_rows()
    except ValueError:
        pytest.skip("no recorded sweep")
    rows = {r["shape"]: r for r in data["rows"]}
    row = rows[7168, 7168, 2048]
    assert row["launch"] == "rung 11 {'super_mn': (8, 2)}"
    assert row["gemm"] is not None and row["gemm"] != row["rung 11"]
    assert data["nonsquare"] == sum(1 for M, N, K in rows if not M == N == K)
    line = next(line for line in plan_tables.format_sweep().splitlines() if line.strip().startswith("7168x7168x2048"))
    assert line.endswith("rung 11 {'super_mn': (8, 2)}") and f"{row['gemm']:.1f}" in line
    assert not re.search(r"plan: rung \d+$", plan_tables.format_sweep(), flags=re.M)


def test_the_alignment_charges_are_the_plans():
    from hgemm_course.library.plan import narrow_tile_speed, small_tile_speed

    rows = plan_tables.alignment_rows()
    assert [r["rows"] for r in rows] == ["both aligned", "A's rows off", "B's rows off", "both off"]
    for r in rows:
        assert r["128x128"] == small_tile_speed(r["N"], r["K"]) and r["128x64"] == narrow_tile_speed(r["N"], r["K"])
    assert rows[0]["128x128"] > rows[1]["128x128"] == rows[2]["128x128"] > rows[3]["128x128"]


# ----------------------------------------------------------------------------- registered where chapters are


@needs_checkout
def test_the_appendix_is_found_after_the_chapters_and_on_the_site():
    assert [p.name for p in book_site.appendices(REPO_ROOT)] == ["A1_plan.ipynb"]
    pages = book_site.pages(REPO_ROOT)
    assert pages.index("A1_plan") == pages.index(book_site.chapters(REPO_ROOT)[-1].stem) + 1
    landing = book_pages.landing_page(REPO_ROOT, book_site.chapters(REPO_ROOT))
    assert ":caption: Appendices" in landing and "\nA1_plan\n" in landing
    assert "(A1_plan.ipynb)" in book_results.sweep_section()


def test_appendices_are_found_by_glob(tmp_path):
    (tmp_path / "chapters").mkdir()
    for name in ("A2_more.ipynb", "A1_plan.ipynb", "12_streamk.ipynb", "Appendix.ipynb"):
        (tmp_path / "chapters" / name).write_text("{}")
    assert [p.name for p in book_site.appendices(tmp_path)] == ["A1_plan.ipynb", "A2_more.ipynb"]
    assert [p.name for p in book_site.chapters(tmp_path)] == ["12_streamk.ipynb"]


@needs_checkout
def test_readme_lists_the_appendix_and_the_notebook_runner_runs_it():
    import inspect

    from hgemm_course.course import notebooks

    assert re.search(r"^\| A1 \| appendix: .*`gemm\(\)`.* \| - \|$", (REPO_ROOT / "README.md").read_text(), flags=re.M)
    assert "chapters(root) + appendices(root)" in inspect.getsource(notebooks.main)


@needs_checkout
def test_chapter_12_teaches_stream_k_and_leaves_the_plan_to_the_appendix():
    """Chapter 12 has its exercise cell and states the co-residency requirement; neither notebook carries clock
    times, "latest run" or the plan's old column."""
    import nbformat

    ch12 = nbformat.read(REPO_ROOT / "chapters" / "12_streamk.ipynb", as_version=4)
    a1 = nbformat.read(REPO_ROOT / "chapters" / "A1_plan.ipynb", as_version=4)
    assert any(c.cell_type == "code" and 'check("ex12_streamk")' in c.source for c in ch12.cells)
    prose = "\n".join(c.source for c in ch12.cells if c.cell_type == "markdown")
    assert "resident" in prose and "MPS" in prose and "green context" in prose
    for nb in (ch12, a1):
        text = "\n".join(c.source for c in nb.cells)
        outputs = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))
        assert not re.search(r"\d\d:\d\d UTC|latest run|plan: rung \d+$", text + outputs, flags=re.M)
        assert "BEGIN SOLUTION" not in outputs and "Warning" not in outputs


def test_the_plans_table_says_which_rung_11_it_weighs_and_the_reason_signs_the_gain():
    text = plan_tables.format_plans([(7168, 7168, 2048)])
    assert "the super tile the plan picks" in text.splitlines()[0]
    p = plan(7168, 7168, 2048, units=66)
    reason = plan_tables.reason_text(p)
    assert "would gain 0.0%" not in reason and "would gain nothing (rung 12 -" in reason


@needs_checkout
def test_the_sweep_table_says_gemms_launch_is_not_recorded_and_marks_plans_that_moved():
    try:
        data = plan_tables.sweep_rows()
    except ValueError:
        pytest.skip("no recorded sweep")
    probed = plan_tables.recorded_plan_launches()
    for r in data["rows"]:
        ran = probed.get(tuple(r["shape"]))
        assert r["differs_from_probes"] == (ran is not None and r["launch"] not in ran)
    text = plan_tables.format_sweep()
    assert "cannot be recovered" in text.splitlines()[0]
    for r in data["rows"]:
        line = next(line for line in text.splitlines() if line.strip().startswith("x".join(map(str, r["shape"]))))
        assert (f" * {r['launch']}" in line) == r["differs_from_probes"]


@needs_checkout
def test_a_launch_not_timed_in_one_probe_is_found_in_another():
    text = plan_tables.format_probe("tile_probe_nvidia-h200_20261201T180119_e5c91a.json",
                                    elsewhere=("tile_probe_nvidia-h200_20261201T191132_499508.json",
                                               "tile_probe_nvidia-h200_20261201T191335_6e60e9.json"))
    assert "(not timed)" not in text
    assert all("fastest:" in line for line in text.splitlines()[2:] if line[:18].strip())
