"""ex09_wgmma_desc: the descriptor is checked against rung 09's own encoder, and the classic
slips are caught with the field that differs named."""
from pathlib import Path

import pytest

from hgemm_course.check import check
from hgemm_course.check.ex09_wgmma_desc import SWIZZLE_CODES, reference
from hgemm_course.library.ladder import r09_wgmma

ROOT = Path(__file__).resolve().parent.parent


def encode(x):
    return (x & 0x3FFFF) >> 4


def make(*, enc=encode, swizzle_shift=62, codes=SWIZZLE_CODES, swap=False, extra=0):
    def wgmma_descriptor(smem_addr, leading_byte_offset, stride_byte_offset, swizzle):
        lbo, sbo = (stride_byte_offset, leading_byte_offset) if swap else (leading_byte_offset, stride_byte_offset)
        return enc(smem_addr) | enc(lbo) << 16 | enc(sbo) << 32 | codes[swizzle] << swizzle_shift | extra
    return wgmma_descriptor


def test_solution_passes():
    result = check("ex09", ROOT / "solutions" / "ex09_wgmma_desc.py")
    assert result.passed, str(result)
    assert "All 3048 cases right: wgmma_descriptor" in result.message
    assert "Extra question, a_descriptor(): all 56 cases right" in result.message


def test_untouched_exercise_fails_with_its_hint():
    result = check("ex09")
    assert not result.passed and "not written yet" in result.message
    assert "Hint: each field in the units and bits the table gives" in result.message and "Traceback" not in str(result)


def test_reference_is_rung_09s_encoder():
    for addr, lbo, sbo in ((1024, 16, 1024), (66560, 8192, 1024), (0x3FFF0, 0x3FFF0, 0x3FFF0)):
        assert reference(addr, lbo, sbo, "128B") == r09_wgmma.smem_descriptor_128b(addr, lbo, sbo)
        assert r09_wgmma.descriptor_fields(reference(addr, lbo, sbo, "64B"))["swizzle"] == 2
    assert reference(1024, 16, 1024, "128B") == 0x4000004000010040     # by hand: 1 << 62 | 64 << 32 | 1 << 16 | 64


def test_the_right_encoding_passes():
    assert check("ex09", make()).passed


def test_no_shift_is_caught_in_hex_with_its_field():
    result = check("ex09", make(enc=lambda x: x & 0x3FFFF))
    assert not result.passed
    assert "expected 0x4000004000010040, got 0x4000040000100400." in result.message
    assert ("The start address field (bits 0-13) holds 0x40 (1024 bytes) but yours holds 0x400 (16384 bytes): "
            "did you forget >> 4?") in result.message
    assert result.first_failure == {"input": {"smem_addr": 1024, "leading_byte_offset": 16,
                                              "stride_byte_offset": 1024, "swizzle": "128B"},
                                    "expected": 0x4000004000010040, "got": 0x4000040000100400}


def test_lbo_and_sbo_swapped():
    result = check("ex09", make(swap=True))
    assert not result.passed
    assert "The leading byte offset field (bits 16-29) holds 0x1 (16 bytes) but yours holds 0x40" in result.message
    assert "LBO and SBO are swapped" in result.message


@pytest.mark.parametrize("shift", [60, 61, 63])
def test_swizzle_bits_in_the_wrong_place(shift):
    result = check("ex09", make(swizzle_shift=shift))
    assert not result.passed
    assert "The swizzle mode field (bits 62-63) holds 1 (128B)" in result.message
    assert f"shifted by {shift} instead of 62" in result.message


def test_swizzle_past_bit_63_is_not_a_64_bit_descriptor():
    result = check("ex09", make(swizzle_shift=64))
    assert not result.passed and "yours has 65 bits" in result.message and "shifted by 64" in result.message


def test_wrong_swizzle_code():
    result = check("ex09", make(codes={"none": 0, "128B": 3, "64B": 2, "32B": 1}))
    assert not result.passed
    assert "holds 1 (128B) but yours holds 3 (32B): that is the code of 32B" in result.message


def test_address_not_masked_to_18_bits():
    result = check("ex09", make(enc=lambda x: x >> 4))
    assert not result.passed
    assert result.first_failure["input"]["smem_addr"] >= 1 << 18
    assert "yours sets bit 14, outside every field" in result.message
    assert "did you forget the mask?" in result.message and "smem_addr=0x40400" in result.message


def test_a_field_cut_too_short_names_the_field():
    result = check("ex09", make(enc=lambda x: (x >> 4) & 0xFFF))
    assert not result.passed
    assert "The start address field (bits 0-13) holds 0x1040" in result.message
    assert "it must hold (smem_addr & 0x3FFFF) >> 4" in result.message


def test_base_offset_must_be_zero():
    result = check("ex09", make(extra=1 << 49))
    assert not result.passed and "The base offset field (bits 49-51) holds 0 but yours holds 1" in result.message


def test_float_answer():
    result = check("ex09", lambda smem_addr, leading_byte_offset, stride_byte_offset, swizzle: float(smem_addr))
    assert not result.passed and "it must return an int (the 64-bit descriptor)" in result.message
