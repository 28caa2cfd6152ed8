"""Drop Qt plugins the bundle must not carry, with the libraries only they pulled in.

Used by llmplan.spec. Why drop anything: the GTK3 platform-theme plugin (libqgtk3.so) links
GTK, which PyInstaller cannot and should not bundle. On a target that has GTK, the plugin would
load the system's GTK next to the build machine's bundled glib/cairo copies, a classic source of
symbol clashes; the app draws its own light/dark themes, so the plugin buys nothing. Qt simply
skips a platform theme that is not there.
"""

from __future__ import annotations

import os

from PyInstaller.depend.bindepend import get_imports

QT_PLUGINS_TO_DROP = ("platformthemes/libqgtk3",)


def _dest(entry) -> str:
    return entry[0].replace("\\", "/")


def _needed(src: str) -> set[str]:
    try:
        return {os.path.basename(name) for name, _ in get_imports(src)}
    except Exception:  # not an ELF/Mach-O/PE file PyInstaller can read: it needs nothing
        return set()


def _closure(roots, top_level: dict[str, str]) -> set[str]:
    """Names of the top-level bundled libraries reachable from ``roots`` through their NEEDED lists."""
    seen: set[str] = set()
    todo = [name for src in roots for name in _needed(src)]
    while todo:
        name = todo.pop()
        if name in seen or name not in top_level:
            continue
        seen.add(name)
        todo.extend(_needed(top_level[name]))
    return seen


def drop_plugins(binaries, patterns=QT_PLUGINS_TO_DROP):
    """``binaries`` without the plugins matching ``patterns`` and the libraries only they needed.

    A top-level library (``libcairo.so.2``, not inside a package folder) is removed only when a
    dropped plugin reaches it and nothing that stays does, so libraries loaded some other way
    (dlopen, ctypes) are never touched.
    """
    dropped = [b for b in binaries if any(p in _dest(b) for p in patterns)]
    if not dropped:
        return list(binaries)
    kept = [b for b in binaries if b not in dropped]
    top_level = {_dest(b): b[1] for b in kept if "/" not in _dest(b)}
    roots = [b[1] for b in kept if "/" in _dest(b) or _dest(b).startswith("libpython")]
    still_needed = _closure(roots, top_level)
    orphans = _closure([b[1] for b in dropped], top_level) - still_needed
    return [b for b in kept if _dest(b) not in orphans]
