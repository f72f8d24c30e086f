"""README's promises: the two commands, CI running the same test command, the table from the records."""
import re

from hgemm_course.paths import REPO_ROOT
from hgemm_course.results import README_BEGIN, README_END, ladder_markdown

README = (REPO_ROOT / "README.md").read_text()


def _bash_blocks(text):
    return re.findall(r"```bash\n(.*?)```", text, flags=re.S)


def test_readme_has_exactly_the_two_setup_commands():
    blocks = [b.strip() for b in _bash_blocks(README)]
    assert blocks == ['pip install -e ".[cu13,dev]" && hgemm-course tour', "pytest --nbval-lax tests chapters"]


def test_ci_runs_the_readme_test_command():
    test_command = _bash_blocks(README)[1].strip()
    ci = (REPO_ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci
    assert 'python3 -m pip install -e ".[cu13,dev]"' in ci


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
