"""README's promises: the two commands CI runs, the files and commands it names, its picture and its table from
the records."""
import re
import shlex
from pathlib import Path

import pytest

from hgemm_course.check import ALL_EXERCISES
from hgemm_course.course.cli import main
from hgemm_course.library.paths import REPO_ROOT
from hgemm_course.measurement.records import README_BEGIN, README_END, ladder_markdown

README = (REPO_ROOT / "README.md").read_text()
CI = (REPO_ROOT / ".ci" / "run").read_text()
# folders of the repository a path README names may start with; ./hgemm-results/ and hgemm-book/ are what
# `tour` and `book` write, not part of a clone
REPO_FOLDERS = ("benchmarks/", "chapters/", "docs/", "exercises/", "results/", "scripts/")
# RMS over 0-255 pixel values: one rung's bar a point higher reads 0.5; matplotlib's wheels bring their own
# FreeType, so one version draws the same pixels on any machine
PICTURE_TOLERANCE = 0.25


def _bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_readme_has_exactly_the_two_setup_commands():
    blocks = [b.strip() for b in _bash_blocks(README)]
    assert blocks == ['pip install -e ".[cu13,dev]" && hgemm-course tour', "pytest --nbval-lax tests chapters"]


def test_ci_runs_the_two_readme_commands_once_each():
    ci_lines = [line.strip() for line in CI.splitlines()]
    for command in _bash_blocks(README):
        assert ci_lines.count(command.strip()) == 1, command


def test_the_ci_runs_them_in_a_fresh_venv():
    setup = CI.index(_bash_blocks(README)[0].strip())
    assert re.search(r'python3 -m venv "\$\w+"\n\. "\$\w+/bin/activate"\n', CI[:setup])


def test_ladder_table_matches_the_recorded_results():
    table = README[README.index(README_BEGIN) + len(README_BEGIN):README.index(README_END)].strip()
    assert table == ladder_markdown().strip(), "run `hgemm-course results --readme`"


def test_the_table_has_a_column_only_where_a_rung_was_timed():
    def rec(rung, n, pct, file="run.json"):
        return {"rung": rung, "M": n, "N": n, "K": n, "tflops": 1.0, "pct_cublas": pct, "paired": True,
                "file": file, "gpu": "NVIDIA H200", "date": "2026-12-01T00:00:00"}

    table = ladder_markdown([rec("11", 4096, 99.0), rec("plan", 1024, 80.0, "plan_only.json")])
    assert "4096^3" in table and "1024^3" not in table
    assert "plan_only.json" not in table and "`results/run.json`" in table


def test_every_file_readme_names_is_in_the_repository():
    links = re.findall(r"\]\(([^)#]+)\)", README)
    quoted = [token for token in re.findall(r"`([^`\s]+)`", README) if token.startswith(REPO_FOLDERS)]
    missing = [path for path in links + quoted if not (REPO_ROOT / path).exists()]
    assert links and quoted and not missing


def test_every_chapter_and_exercise_readme_lists_exists():
    rows = re.findall(r"^\| (\d\d) \| .* \| (.*) \|$", README, flags=re.M)
    assert [number for number, _ in rows] == [path.name[:2] for path in sorted(REPO_ROOT.glob("chapters/[0-9][0-9]_*.ipynb"))]
    listed = [name for _, cell in rows for name in re.findall(r"`(ex\w+)`", cell)]
    assert listed == list(ALL_EXERCISES)


@pytest.mark.parametrize("command", sorted(set(re.findall(r"`hgemm-course ([a-z][\w-]*)", README))))
def test_every_command_readme_names_exists(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0, capsys.readouterr().err


def test_each_picture_is_what_its_command_draws_from_the_records_now(tmp_path):
    """README's pictures are committed (a README on a code host shows only files of the repository), so each is
    checked against a fresh drawing by the command its caption names: a new record makes it stale, and this fails."""
    from matplotlib.testing.compare import compare_images
    from matplotlib.testing.exceptions import ImageComparisonFailure

    pictures = re.findall(r"!\[[^]]*\]\((results/[\w.]+\.png)\)\n\*.*?`(hgemm-course viz [^`]*)`", README, flags=re.S)
    assert len(pictures) == README.count("![") >= 2, "each picture is followed by a caption naming the command"
    for path, command in pictures:
        argv = shlex.split(command)[1:]
        assert argv[argv.index("--out") + 1] == path
        drawn = tmp_path / f"drawn_{Path(path).name}"
        argv[argv.index("--out") + 1] = str(drawn)
        assert main(argv) == 0
        try:
            difference = compare_images(str(REPO_ROOT / path), str(drawn), tol=PICTURE_TOLERANCE)
        except ImageComparisonFailure as exc:     # another size: rungs, sizes or shapes were added since
            difference = str(exc)
        assert difference is None, f"{path} is not what the records draw now: run `{command}` ({difference})"

def test_a_cell_gives_the_median_of_the_recorded_runs_with_their_spread():
    def rec(rung, pct, date, vendor="cuBLAS (cupy.matmul)"):
        return {"rung": rung, "M": 8192, "N": 8192, "K": 8192, "tflops": 7.0 * pct, "pct_cublas": pct, "paired": True,
                "file": f"run_{date}.json", "gpu": "NVIDIA H200", "date": f"2026-12-0{date}T00:00:00", "vendor": vendor}

    runs = [rec("11", pct, d) for pct, d in ((100.1, 1), (103.0, 2), (105.0, 3), (102.5, 4), (101.0, 5))]
    runs += [rec("12", 104.0, 5), rec("12", 99.0, 4, vendor="cuBLASLt (torch.matmul)")]
    table = ladder_markdown(runs)
    row11 = next(line for line in table.splitlines() if line.startswith("| 11 "))
    row12 = next(line for line in table.splitlines() if line.startswith("| 12 "))
    assert row11.endswith("| 717.5 TF/s, **102.5%** (100.5-104.2, 5 runs) |")
    assert row12.endswith("| 728.0 TF/s, **104.0%** (1 run) |")     # only the runs against the newest's baseline
    assert "where two rungs' ranges overlap, the records do not order them" in table
