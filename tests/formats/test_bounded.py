"""The bounded reader (issue 17, "one bounded reader"): every refusal is the caller's error type, one
line, and comes back at once, whatever sits at the path (FIFO, device, folder, loop) or in the bytes."""

from __future__ import annotations

import os

import pytest

from llmplan.errors import ConfigError, InputError
from llmplan.formats.bounded import (
    MAX_INT_DIGITS,
    load_json,
    load_toml,
    parse_json,
    parse_toml,
    read_capped,
)
from tests.trust._issue17 import returns_within

posix_only = pytest.mark.skipif(os.name != "posix", reason="FIFOs and /dev/zero are POSIX")


@posix_only
def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "plan.llmplan"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match=r"is a pipe \(FIFO\).*ordinary file"):
        returns_within(5, lambda: read_capped(fifo, 100, what="config.json", error=ConfigError))


@posix_only
def test_character_devices_are_refused():
    for dev in ("/dev/zero", "/dev/null", "/dev/urandom"):
        if os.path.exists(dev):
            with pytest.raises(InputError, match="character device"):
                returns_within(5, lambda d=dev: read_capped(d, 100))


def test_folder_missing_and_loop(tmp_path):
    with pytest.raises(InputError, match="folder"):
        read_capped(tmp_path, 10)
    with pytest.raises(InputError, match="no such file"):
        read_capped(tmp_path / "absent", 10)
    if os.name == "posix":
        (tmp_path / "a").symlink_to(tmp_path / "b")
        (tmp_path / "b").symlink_to(tmp_path / "a")
        with pytest.raises(InputError, match="loops"):
            read_capped(tmp_path / "a", 10)
    with pytest.raises(InputError, match="not a valid file name"):
        read_capped("a\x00b", 10)


def test_cap_is_exact_and_symlinks_to_files_are_read(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 10)
    assert read_capped(p, 10) == b"x" * 10
    with pytest.raises(InputError, match="larger than 9 bytes"):
        read_capped(p, 9)
    if os.name == "posix":
        (tmp_path / "link").symlink_to(p)
        assert read_capped(tmp_path / "link", 10) == b"x" * 10


@pytest.mark.parametrize(
    ("text", "message"),
    [("1" * 5000, "integer of 5,000 digits"), ('{"a": ' + "9" * (MAX_INT_DIGITS + 1) + "}", "digits"),
     ("[" * 65 + "]" * 65, "nested more than 64"), ('{"a": 1, "a": 2}', "appears twice"),
     ('{"x": "\\ud800"}', "lone surrogate"), ('["\\udfff"]', "lone surrogate"), ('{"\\ud800": 1}', "lone surrogate"),
     ("NaN", "not a JSON number"), ("[-Infinity]", "not a JSON number"), ("1e400", "too large to be finite"),
     ("{", "broken JSON"), (b"\xff", "not UTF-8"), ("-" + "1" * 4400, "digits")],
)
def test_json_refusals_are_one_clear_line(text, message):
    with pytest.raises(ConfigError, match=message) as info:
        parse_json(text, "cfg.json", what="config.json", error=ConfigError)
    assert "\n" not in str(info.value) and str(info.value).startswith("cfg.json: ")


def test_json_that_is_fine_stays_fine():
    assert parse_json('\ufeff{"a": [1, 2.5, "\\ud83d\\ude00", true, null]}', "x") == {
        "a": [1, 2.5, "\U0001f600", True, None]}
    assert parse_json("1" * MAX_INT_DIGITS, "x") == int("1" * MAX_INT_DIGITS)


@pytest.mark.parametrize(("text", "message"), [("a = " + "1" * 5000, "number too long"), ("a = " + "1" * 100, "100 digits"),
                                               ("a = 1\na = 2", "not valid TOML"),
                                               ("a = " + "[" * 5000 + "]" * 5000, "not")])
def test_toml_refusals(text, message):
    with pytest.raises(InputError, match=message):
        parse_toml(text, "x.toml")


def test_load_helpers(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"a": 1}')
    assert load_json(p, 100) == {"a": 1}
    t = tmp_path / "x.toml"
    t.write_text("a = 1\n")
    assert load_toml(t, 100) == {"a": 1}


def test_a_known_binary_says_the_hint_of_what_it_is_not_once():
    """trial33: a PDF given as a calibration read "this is a PDF document, not a calibration file (delete it or run
    `llmplan-cli calibrate` again); pick a calibration file (delete it or run `llmplan-cli calibrate` again)"."""
    from llmplan.formats.bounded import decode_text

    what = "calibration file (delete it or run `llmplan-cli calibrate` again)"
    with pytest.raises(InputError) as err:
        decode_text(b"%PDF-1.4\n", "x.pdf", what=what, error=InputError)
    text = str(err.value)
    assert text.startswith("x.pdf: this is a PDF document, not a calibration file; pick a calibration file (")
    assert text.count("llmplan-cli calibrate") == 1
