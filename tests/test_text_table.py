import pytest

from hgemm_course.measurement.text_table import Column, cell, text_table


def test_columns_keep_their_widths_and_alignments():
    table = text_table([Column("rung", 5, "<"), Column("ms", 7)], [["05", cell(1.23456, ".3f")], ["12", None]])
    assert table.splitlines() == ["rung       ms", "05      1.235", "12          -"]


def test_a_wide_cell_pushes_its_line_and_a_string_row_prints_as_it_is():
    table = text_table([Column("a", 2), Column("b", 2)], [["12345", "x"], "a note"], gap="|")
    assert table.splitlines() == [" a| b", "12345| x", "a note"]


def test_cell_formats_a_value_or_says_it_is_missing():
    assert cell(97.04, ".1f", "%") == "97.0%" and cell(None, ".1f", "%") == "-"


def test_a_row_of_the_wrong_length_and_a_bad_alignment_are_refused():
    with pytest.raises(ValueError, match="a row of 1 cells in a table of 2 columns"):
        text_table([Column("a", 2), Column("b", 2)], [["x"]])
    with pytest.raises(ValueError, match="aligns left"):
        Column("a", 2, "^")
