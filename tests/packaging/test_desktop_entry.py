"""packaging/desktop_entry.py: Exec lines expand the way the Desktop Entry Specification says."""

from __future__ import annotations

import pytest

TRICKY = [
    "/opt/llmplan/llmplan",
    "/home/ada/My Apps/llmplan/llmplan",
    '/home/ada/say "hi"/llmplan',
    "/home/ada/$HOME/`x`/llmplan",
    "/home/ada/back\\slash/llmplan",
    "/home/ada/100%/llmplan",
    "/home/ada/semi;colon/llmplan",
]


@pytest.mark.parametrize("path", TRICKY)
def test_a_quoted_path_comes_back_unchanged(desktop_entry, path):
    entry = {"Type": "Application", "Exec": f"{desktop_entry.quote_exec_arg(path)} %f"}
    assert desktop_entry.command_for(entry, ["/tmp/a plan.llmplan"]) == [path, "/tmp/a plan.llmplan"]


def test_field_codes(desktop_entry):
    entry = {"Type": "Application", "Exec": 'app --ratio 50%% %U %i %f'}
    assert desktop_entry.command_for(entry, ["a", "b"]) == ["app", "--ratio", "50%", "a", "b", "a"]
    assert desktop_entry.command_for({"Exec": "app %f"}, []) == ["app"]  # opened without a file


def test_spec_examples_of_escaping(desktop_entry):
    # From the specification: a literal backslash in a quoted argument takes four in the file.
    entry = {"Exec": r'"/bin/echo" "a\\\\b" "say \\"x\\"" "\\$HOME"'}
    assert desktop_entry.command_for(entry, []) == ["/bin/echo", "a\\b", 'say "x"', "$HOME"]


def test_parse_reads_only_the_desktop_entry_group(desktop_entry):
    text = ("# comment\n[Desktop Entry]\nType=Application\nName=llmplan\nExec=llmplan %f\n\n"
            "[Desktop Action new]\nName=Other\nExec=other\n")
    entry = desktop_entry.parse(text)
    assert entry == {"Type": "Application", "Name": "llmplan", "Exec": "llmplan %f"}


@pytest.mark.parametrize(("text", "message"), [
    ("[Desktop Entry]\nName=x\n", "no \\[Desktop Entry\\] group with a Type"),
    ("[Desktop Entry]\nType=Application\nType=Link\n", "appears twice"),
    ("[Desktop Entry]\nType=Application\nnonsense\n", "expected 'Key=Value'"),
])
def test_malformed_entries_are_refused(desktop_entry, text, message):
    with pytest.raises(desktop_entry.DesktopEntryError, match=message):
        desktop_entry.parse(text)


def test_broken_exec_lines_are_refused(desktop_entry):
    with pytest.raises(desktop_entry.DesktopEntryError, match="unterminated quote"):
        desktop_entry.command_for({"Exec": '"/opt/llmplan %f'}, [])
    with pytest.raises(desktop_entry.DesktopEntryError, match="no Exec"):
        desktop_entry.command_for({"Type": "Application"}, [])
    with pytest.raises(desktop_entry.DesktopEntryError, match="line break"):
        desktop_entry.quote_exec_arg("/opt/a\nb")
