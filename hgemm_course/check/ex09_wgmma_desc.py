"""Checker for ex09_wgmma_desc: the 64-bit wgmma shared-memory matrix descriptor, against rung 09's
own encoder and decoder (``hgemm_course.library.ladder.r09_wgmma.smem_descriptor_128b`` and
``descriptor_fields``, the host twin of ``wgmma_desc_128b`` in ptx_snippets/wgmma.cuh).

Rung 09's encoder writes the 128B swizzle mode its kernel uses; for the other modes the reference
is that descriptor with the mode field (bits 62-63) set to the PTX ISA's code for the mode.

Checked on rung 09's own descriptors (A and B of every stage and k16 step), on the corners of the
domain, on random cases over it (16-byte aligned addresses and offsets below 2^18, each swizzle
mode), and on values with bits above bit 17, which the encoding drops. A wrong answer is shown in
hex and explained field by field (both descriptors decoded with rung 09's decoder), with the
slip that gives exactly the learner's descriptor named where there is one.
"""
from __future__ import annotations

import random

from .feedback import Exercise, Failure, Learner, as_int, format_call, passed_message, with_extra

FUNCTION = "wgmma_descriptor"
EXTRA = "a_descriptor"          # the extra question: A's descriptor for other row widths
RANDOM_CASES = 3000
DOMAIN = 1 << 18                  # shared-memory byte addresses and offsets that the descriptor encodes
SWIZZLE_CODES = {"none": 0, "128B": 1, "64B": 2, "32B": 3}   # PTX ISA, "Matrix Descriptor Format"
MODE_NAMES = {code: name for name, code in SWIZZLE_CODES.items()}
ARGUMENT_OF = {"start": "smem_addr", "lbo": "leading_byte_offset", "sbo": "stride_byte_offset"}


def _r09():
    from ..library.ladder import r09_wgmma
    return r09_wgmma


def fields() -> list[tuple[str, str, int, int]]:
    """(key of r09's decoder, name, first bit, width) of each descriptor field, low bits first."""
    r = _r09()
    return [("start", "start address", r.DESC_START_SHIFT, 14), ("lbo", "leading byte offset", r.DESC_LBO_SHIFT, 14),
            ("sbo", "stride byte offset", r.DESC_SBO_SHIFT, 14),
            ("base_offset", "base offset", r.DESC_BASE_OFFSET_SHIFT, 3), ("swizzle", "swizzle mode", r.DESC_SWIZZLE_SHIFT, 2)]


def _field_bits() -> int:
    return sum(((1 << width) - 1) << shift for _, _, shift, width in fields())


def reference(smem_addr: int, leading_byte_offset: int, stride_byte_offset: int, swizzle: str) -> int:
    """Rung 09's descriptor, with the swizzle mode field set to ``swizzle``'s code."""
    r = _r09()
    desc = r.smem_descriptor_128b(smem_addr, leading_byte_offset, stride_byte_offset)
    return desc & ~(0x3 << r.DESC_SWIZZLE_SHIFT) | SWIZZLE_CODES[swizzle] << r.DESC_SWIZZLE_SHIFT


def _cases() -> list[tuple[dict, str]]:
    """(arguments, what the case is) in the order they are checked."""
    r = _r09()
    t = r.TILES
    a_stage_bytes, b_stage_bytes, b_panel = t.bm * t.bk * 2, t.bk * t.bn * 2, t.bk * 128
    a_smem = r.SWIZZLE_ATOM_BYTES                      # the first 1024-byte aligned address past 0
    b_smem = a_smem + t.stages * a_stage_bytes
    cases = []
    for stage in range(t.stages):
        for kk in range(t.bk // 16):
            for i in range(t.bm // 64):
                cases.append(({"smem_addr": a_smem + stage * a_stage_bytes + i * 64 * 128 + kk * 32,
                               "leading_byte_offset": r.KMAJOR_LBO_UNUSED,
                               "stride_byte_offset": r.SWIZZLE_ATOM_BYTES, "swizzle": "128B"},
                              f"rung 09's descriptor of A: stage {stage}, product {i}, k16 step {kk}"))
            cases.append(({"smem_addr": b_smem + stage * b_stage_bytes + kk * 16 * 128,
                           "leading_byte_offset": b_panel, "stride_byte_offset": r.SWIZZLE_ATOM_BYTES,
                           "swizzle": "128B"}, f"rung 09's descriptor of B: stage {stage}, k16 step {kk}"))
    top = DOMAIN - 16
    for mode in SWIZZLE_CODES:
        cases.append(({"smem_addr": 0, "leading_byte_offset": 0, "stride_byte_offset": 0, "swizzle": mode},
                      "all offsets zero"))
        cases.append(({"smem_addr": top, "leading_byte_offset": top, "stride_byte_offset": top, "swizzle": mode},
                      "the largest address and offsets the fields hold"))
    rng = random.Random(9)
    for _ in range(RANDOM_CASES):
        addr = rng.choice([16 * rng.randrange(DOMAIN // 16), 1024 * rng.randrange(DOMAIN // 1024)])
        cases.append(({"smem_addr": addr, "leading_byte_offset": 16 * rng.randrange(DOMAIN // 16),
                       "stride_byte_offset": 16 * rng.randrange(DOMAIN // 16),
                       "swizzle": rng.choice(list(SWIZZLE_CODES))}, "a random case"))
    for addr, lbo, sbo in ((DOMAIN + 1024, 16, 1024), ((1 << 20) + 2048, 8192, 1024), (1024, DOMAIN + 8192, 1024),
                           (1024, 16, (1 << 22) + 1024)):
        cases.append(({"smem_addr": addr, "leading_byte_offset": lbo, "stride_byte_offset": sbo, "swizzle": "128B"},
                      "a value with bits above bit 17, which the encoding drops"))
    return cases


def verify(learner: Learner) -> str:
    cases = _cases()
    learner.plan([args for args, _ in cases])
    for args, what in cases:
        call = format_call(FUNCTION, args)
        got = as_int(learner(**args), call, args, "an int (the 64-bit descriptor)")
        expected = reference(**args)
        if got != expected:
            raise Failure(f"{call} ({what}): expected {expected:#018x}, got {_hex(got)}.\n"
                          + explain(args, expected, got),
                          {"input": args, "expected": expected, "got": got})
    passed = passed_message(len(cases), f"{FUNCTION}: start address, leading and stride byte offsets and the swizzle "
                            "mode all where wgmma reads them, as rung 09 encodes them")
    return with_extra(learner, passed, EXTRA, verify_a, "A's descriptors for rows of 128, 64 and 32 bytes")


def verify_a(learner: Learner) -> int:
    """The extra question over bk = 64, 32, 16, products 0-3, every k16 step, two stage addresses."""
    checked = 0
    for bk, swizzle in ((64, "128B"), (32, "64B"), (16, "32B")):
        row_bytes = 2 * bk
        for stage_addr in (1024, 1024 + 5 * 64 * row_bytes * 2):
            for i in range(4):
                for kk in range(bk // 16):
                    args = {"stage_addr": stage_addr, "i": i, "kk": kk, "bk": bk}
                    call = format_call(EXTRA, args)
                    got = as_int(learner(**args), call, args, "an int (the 64-bit descriptor)")
                    fields = {"smem_addr": stage_addr + i * 64 * row_bytes + kk * 32, "leading_byte_offset": 16,
                              "stride_byte_offset": 8 * row_bytes, "swizzle": swizzle}
                    expected = reference(**fields)
                    checked += 1
                    if got != expected:
                        raise Failure(f"{call}: expected {expected:#018x}, got {_hex(got)}.\n" + explain(fields, expected, got)
                                      + f"\nA row of bk = {bk} halves is {row_bytes} bytes: the {swizzle} swizzle, atoms "
                                      f"of 8 rows, product i {64 * row_bytes} i bytes into the stage.",
                                      {"input": args, "expected": expected, "got": got})
    return checked


def _hex(value: int) -> str:
    return f"{value:#018x}" if 0 <= value < 1 << 64 else hex(value)


def _bit_list(mask: int) -> str:
    bits = [b for b in range(mask.bit_length()) if mask >> b & 1]
    shown = ", ".join(map(str, bits[:8])) + (", ..." if len(bits) > 8 else "")
    return f"bit{'s' if len(bits) > 1 else ''} {shown}"


def explain(args: dict, expected: int, got: int) -> str:
    """The first field that differs (both descriptors decoded with rung 09's decoder), bits set
    outside every field, and the slip that gives ``got``."""
    cause = _slip(args, got)
    if not 0 <= got < 1 << 64:
        what = "is negative" if got < 0 else f"has {got.bit_length()} bits"
        return (f"A descriptor is 64 bits (0 <= d < 2**64); yours {what}: a field shifted past bit 63 does not exist "
                "in the register wgmma reads." + (f" {cause[0].upper()}{cause[1:]}" if cause else ""))
    decode = _r09().descriptor_fields
    want, have = decode(expected), decode(got)
    lines = []
    for key, name, shift, width in fields():
        if want[key] == have[key]:
            continue
        bits = f"bits {shift}-{shift + width - 1}"
        if key in ARGUMENT_OF:
            line = (f"The {name} field ({bits}) holds {want[key] >> 4:#x} ({want[key]} bytes) but yours holds "
                    f"{have[key] >> 4:#x} ({have[key]} bytes)")
        elif key == "swizzle":
            line = (f"The {name} field ({bits}) holds {want[key]} ({MODE_NAMES[want[key]]}) but yours holds "
                    f"{have[key]} ({MODE_NAMES[have[key]]})")
        else:
            line = f"The {name} field ({bits}) holds {want[key]} but yours holds {have[key]}"
        lines.append(f"{line}: {cause or _field_hint(key, args, have)}")
        break                                   # the first field that differs
    stray = got & ~_field_bits()
    if stray:
        fields_agree = not lines
        lead = "Every field decodes the same, but yours sets" if fields_agree else "Yours also sets"
        lines.append(f"{lead} {_bit_list(stray)}, outside every field (bits 14-15, 30-31, 46-48 and 52-61 must be 0)"
                     + (f": {cause}" if cause and fields_agree else "."))
    return "\n".join(lines)


def _field_hint(key: str, args: dict, have: dict) -> str:
    """Why this field may be wrong, when no known slip gives the learner's whole descriptor."""
    if key in ARGUMENT_OF:
        value = args[ARGUMENT_OF[key]]
        if have[key] >> 4 == value & 0x3FFF:
            return "did you forget >> 4? The field stores the byte value divided by 16."
        return f"it must hold ({ARGUMENT_OF[key]} & 0x3FFFF) >> 4."
    if key == "swizzle":
        return "the codes are " + ", ".join(f"{n} {c}" for n, c in SWIZZLE_CODES.items()) + "."
    return "it is 0 when the stage starts on its swizzle pattern's boundary, as the course's 1024-byte aligned stages do."


def _slip(args: dict, got: int) -> str | None:
    """The well-known slip that produces exactly ``got`` for these arguments, named; None if none does."""
    r = _r09()
    addr, lbo, sbo, mode = (args["smem_addr"], args["leading_byte_offset"], args["stride_byte_offset"],
                            SWIZZLE_CODES[args["swizzle"]])

    def encode(x: int) -> int:                  # the PTX ISA's matrix-descriptor-encode
        return (x & r.DESC_FIELD_MASK) >> 4

    def pack(enc=encode, a=addr, lo=lbo, st=sbo, code=mode, swizzle_shift=r.DESC_SWIZZLE_SHIFT):
        return (enc(a) << r.DESC_START_SHIFT | enc(lo) << r.DESC_LBO_SHIFT | enc(st) << r.DESC_SBO_SHIFT
                | code << swizzle_shift)

    too_big = ", ".join(f"{k}={v:#x}" for k, v in args.items() if isinstance(v, int) and v >= DOMAIN)
    slips = [
        (pack(lambda x: x & r.DESC_FIELD_MASK), "did you forget >> 4? Each field stores its byte value divided by 16 "
                                                "(the low 4 bits are always 0)."),
        (pack(lambda x: x), "did you forget >> 4? Each field stores its byte value divided by 16 (the low 4 bits "
                            "are always 0)."),
        (pack(lambda x: x >> 4), f"did you forget the mask? Only the low 18 bits of an address or offset are "
                                 f"encoded, (x & 0x3FFFF) >> 4; {too_big} has bits above bit 17, and without the "
                                 "mask they spill out of the 14-bit field."),
        (pack(lo=sbo, st=lbo), f"LBO and SBO are swapped: the leading byte offset ({lbo} bytes) goes to bits 16-29, "
                               f"the stride byte offset ({sbo} bytes) to bits 32-45."),
    ]
    if mode:
        slips += [(pack(swizzle_shift=bit), f"the swizzle code is shifted by {bit} instead of 62: the mode lives in "
                                            "bits 62-63.") for bit in range(72) if bit != r.DESC_SWIZZLE_SHIFT]
    slips += [(pack(code=code), f"that is the code of {MODE_NAMES[code]}; the codes are "
                                + ", ".join(f"{n} {c}" for n, c in SWIZZLE_CODES.items()) + ".")
              for code in SWIZZLE_CODES.values() if code != mode]
    for candidate, text in slips:
        if candidate == got:
            return text
    return None


EXERCISE = Exercise(
    name="ex09_wgmma_desc",
    function=FUNCTION,
    description="wgmma descriptor: encode a shared-memory operand's address, LBO, SBO and swizzle in 64 bits.",
    verify=verify,
)
