"""Messages as the app says them (Qt-free): never "run a command" to a person using the window.

The estimation packages share their error and note texts with the command line, where
"`llmplan-cli catalog gpus` lists…" or "--set hardware.gpu=ID" is the right advice. In the
app the same advice is a control to use, so ``for_app`` rewrites those hints into the app's
own words before any banner, dialog, tooltip or status line shows them (issue 18: the
unknown-GPU note told an app user to run ``llmplan-cli catalog gpus``). Hints without an
app equivalent are dropped; the rest of the sentence stays as the engine wrote it.
"""

from __future__ import annotations

import re

# (pattern, replacement), applied in order; the specific ones first, the catch-alls last.
_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), r) for p, r in (
    (r";?\s*`?llmplan-cli catalog gpus`? lists the entries to plan on instead \(--set hardware\.gpu=ID\)",
     "; pick a GPU from the catalog in Hardware to plan on instead"),
    (r"plan on one with --set hardware\.gpu=ID \(or pick it in the app\)", "pick one in Hardware"),
    (r"\(llmplan-cli catalog networks\)", "(pick one in Hardware ▸ Network)"),
    (r"hardware\.network: (\d+) nodes need a network between them; set hardware\.network to a catalog network id",
     r"\1 nodes need a network between them: pick one in Hardware ▸ Network (or a node preset)"),
    (r"to import a model's config\.json use '?llmplan-cli estimate --model PATH'?",
     "to use a model's config.json, drop it on the window or use File ▸ Import Model…"),
    (r";?\s*run `llmplan-cli calibrate` again", "; measure this machine again to replace it"),
    # an unknown model id (catalog.models): the catch-all below left "List them with, or pass a path ..."
    (r"List them with `llmplan-cli catalog models`, or pass a path to a config\.json",
     "Pick one in the model list, or drop its config.json on the window"),
    (r"\s*\(list them with `llmplan-cli catalog (gpus|networks|nodes)`\)", r" (the Hardware pickers list them)"),
    (r"\s*\((?:also: )?`?llmplan-cli [^)]*\)", ""),
    (r"[;,]?\s*(?:run |see |use )?`llmplan-cli [^`]*`", ""),
    (r"--set ([a-z_]+(?:\.[a-z_]+)+)=\S+", r"the \1 setting"),
))


def for_app(text: str) -> str:
    """``text`` with every command-line hint replaced by what to do in the app."""
    for pattern, replacement in _REWRITES:
        text = pattern.sub(replacement, text)
    return text
