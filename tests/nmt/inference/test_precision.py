"""The precision paths of an export, and the rule `auto` picks one by."""

import pytest

from nmt.inference import precision
from nmt.inference.precision import (
    BFLOAT16,
    FLOAT32,
    bfloat16_units,
    carried_paths,
    choose_precision,
    cpu_bfloat16_units,
    export_flag,
    export_paths,
    signature_name,
)

# Abridged /proc/cpuinfo of three machines.
ZEN3 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B13
flags\t\t: fpu sse2 avx avx2 fma bmi2 sha_ni
"""
SAPPHIRE_RAPIDS = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8481C
flags\t\t: fpu avx2 avx512f avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8
"""
GRAVITON3 = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes sha3 sve svebf16 i8mm bf16 dgh rng
CPU implementer\t: 0x41
"""


def test_units_are_read_from_x86_flags_and_arm_features():
    assert bfloat16_units(ZEN3) == ()
    assert bfloat16_units(SAPPHIRE_RAPIDS) == ("amx_bf16", "avx512_bf16")
    assert bfloat16_units(GRAVITON3) == ("bf16",)
    # Only the feature lists count, and only whole names.
    assert bfloat16_units("model name\t: bf16 avx512_bf16 lookalike\nflags : avx512_bf16x") == ()


@pytest.mark.parametrize("cpuinfo, expected", [(ZEN3, FLOAT32), (SAPPHIRE_RAPIDS, BFLOAT16),
                                               (GRAVITON3, BFLOAT16)])
def test_auto_picks_bfloat16_only_where_the_cpu_has_a_unit(cpuinfo, expected, tmp_path,
                                                          monkeypatch):
    fake = tmp_path / "cpuinfo"
    fake.write_text(cpuinfo)
    monkeypatch.setattr(precision, "CPUINFO", fake)

    choice = choose_precision("auto", (FLOAT32, BFLOAT16))

    assert choice.precision == expected
    assert choice.reason.startswith("auto: the CPU has")
    assert ("no bfloat16 unit" in choice.reason) == (expected == FLOAT32)


def test_an_unreadable_cpuinfo_keeps_float32(tmp_path, monkeypatch):
    monkeypatch.setattr(precision, "CPUINFO", tmp_path / "absent")
    assert cpu_bfloat16_units() == ()
    assert choose_precision("auto", (FLOAT32, BFLOAT16)).precision == FLOAT32


def test_auto_takes_the_only_path_of_a_one_path_export():
    only_bf16 = choose_precision("auto", (BFLOAT16,), units=())
    assert only_bf16.precision == BFLOAT16 and "emulated" in only_bf16.reason
    only_f32 = choose_precision("auto", (FLOAT32,), units=("amx_bf16",))
    assert only_f32 == precision.PrecisionChoice(FLOAT32, "auto: the export carries only float32")


def test_a_named_path_is_taken_whatever_the_cpu():
    assert choose_precision(BFLOAT16, (FLOAT32, BFLOAT16), units=()).precision == BFLOAT16
    assert choose_precision(FLOAT32, (FLOAT32, BFLOAT16), units=("amx_bf16",)).precision == (
        FLOAT32)


def test_a_path_the_export_lacks_is_an_error_that_says_how_to_get_it():
    with pytest.raises(ValueError, match=r"models/x/3 carries no bfloat16 path \(it carries "
                                         r"float32\).*--precision both"):
        choose_precision(BFLOAT16, (FLOAT32,), where="models/x/3")
    with pytest.raises(ValueError, match="carries no float32 path"):
        choose_precision(FLOAT32, (BFLOAT16,))


def test_an_unknown_choice_is_an_error_naming_it():
    with pytest.raises(ValueError, match=r"one of \('auto', 'float32', 'bfloat16'\). "
                                         r"Received: precision='fp16'"):
        choose_precision("fp16", (FLOAT32,))
    with pytest.raises(ValueError, match="Received: precision='auto'"):
        export_paths("auto")


def test_export_paths_and_back():
    assert export_paths("both") == (FLOAT32, BFLOAT16)
    assert export_paths(BFLOAT16) == (BFLOAT16,)
    both = {"precision": FLOAT32, "precisions": [FLOAT32, BFLOAT16]}
    assert carried_paths(both) == (FLOAT32, BFLOAT16) and export_flag(both) == "both"
    # Exports made before parallel paths: their one `precision`, or nothing (float32).
    assert carried_paths({"precision": BFLOAT16}) == (BFLOAT16,)
    assert export_flag({"precision": BFLOAT16}) == BFLOAT16
    assert carried_paths({}) == (FLOAT32,) and export_flag({}) == FLOAT32


def test_signature_names_of_each_path():
    assert signature_name("serving_default", FLOAT32, FLOAT32) == "serving_default"
    assert signature_name("serving_default", BFLOAT16, FLOAT32) == "serving_bfloat16"
    assert signature_name("translate_with_options", BFLOAT16, FLOAT32) == (
        "translate_with_options_bfloat16")
    assert signature_name("translate_with_options", BFLOAT16, BFLOAT16) == (
        "translate_with_options")
    with pytest.raises(ValueError, match="Received: signature='align'"):
        signature_name("align", BFLOAT16, FLOAT32)
