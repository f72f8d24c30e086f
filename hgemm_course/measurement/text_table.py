"""Fixed-width text tables, the one formatter the printed tables go through: each column has a header, a width
and an alignment, and each row's cells are strings already formatted (:func:`cell` formats a number or says "-").
Widths are fixed, not fitted to the cells, so that the tables of two runs line up the same."""
from __future__ import annotations

from dataclasses import dataclass

MISSING = "-"        # what a cell without a value prints


@dataclass(frozen=True)
class Column:
    header: str
    width: int
    align: str = ">"     # ">" right, "<" left

    def __post_init__(self):
        if self.align not in ("<", ">"):
            raise ValueError(f"align={self.align!r}: a column aligns left ('<') or right ('>')")


def cell(value, spec: str, suffix: str = "") -> str:
    """``value`` formatted by ``spec`` (``".1f"``) and followed by ``suffix`` (``"%"``), or "-" where it is None."""
    return MISSING if value is None else format(value, spec) + suffix


def text_table(columns: list[Column], rows, *, gap: str = " ") -> str:
    """The header line, then a line per row: each cell padded to its column's width and aligned as the column says,
    cells joined by ``gap``. A cell that is None prints "-"; one wider than its column pushes the rest of its line
    right. A row that is a string, not a list of cells, is printed as it is (a note between the rows)."""
    def line(cells) -> str:
        if len(cells) != len(columns):
            raise ValueError(f"a row of {len(cells)} cells in a table of {len(columns)} columns: {cells!r}")
        return gap.join(f"{MISSING if c is None else str(c):{col.align}{col.width}}" for col, c in zip(columns, cells))
    return "\n".join([line([col.header for col in columns])]
                     + [row if isinstance(row, str) else line(row) for row in rows])
