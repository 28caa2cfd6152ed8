"""Checks the built bundle the way a user meets it (``make dist-check``; run it before a release).

It unpacks ``dist/llmplan-VERSION-linux-ARCH.tar.gz`` into a temporary folder and, with a bare
environment (no venv, no PYTHONPATH, a fresh HOME, the source tree not the working folder):

1. ``llmplan-cli --version`` says ``llmplan.__version__``; ``llmplan-cli catalog models`` lists the
   shipped model catalog (found inside the bundle, through importlib.resources);
2. for every example plan, ``llmplan --self-test PLAN`` prints the same verdict, with the same exit
   code, as the source tree's app does, and the inference example fits;
3. ``llmplan --screenshot`` saves a full, non-blank window (kept as dist/dist-check/screenshot.png;
   LOOK at it), and how long that takes;
4. ``desktop/install-desktop.sh`` installs the desktop entry into a temporary XDG_DATA_HOME; its
   Exec line, expanded as a launcher does for a double-clicked plan, opens the plan; the MIME
   database maps *.llmplan to application/x-llmplan; desktop-file-validate / appstreamcli accept
   the installed files (each tool only where installed); --uninstall removes it all;
5. the system libraries the bundle still loads from the target are only the documented ones;
6. the wheel (dist/llmplan-VERSION-py3-none-any.whl) installs with ``[gui]`` into a fresh venv and
   its ``llmplan-cli`` and ``llmplan`` find the catalogs inside the installed package
   (``--no-wheel`` skips this: it needs PyPI or a pip cache).

``--chroot DIR`` also runs the bundle inside a bare Debian root (see docs/install.md), the
nearest thing to a clean machine: only the libraries named there are installed in it.
Exit code 0 when every check passed.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "packaging"))
import bundle_meta  # noqa: E402
import desktop_entry  # noqa: E402

EXAMPLES = sorted((ROOT / "resources" / "examples").glob("*.llmplan"))
MUST_FIT = "serve-llama-3.1-70b-tp4-h100.llmplan"

# What the target system must provide (docs/install.md): glibc, the OpenGL/EGL dispatch libraries
# (libgl1, libegl1), libxcb (a dependency of libgl1) and, on Wayland desktops, libwayland-*.
# PyInstaller leaves these out on purpose: they must match the machine's graphics driver.
SYSTEM_LIBS = re.compile(
    r"^(ld-linux.*|lib(c|m|dl|rt|pthread|resolv|util|anl)\.so\..*"
    r"|libE?(Open)?GLX?(ESv2|dispatch)?\.so\..*|libxcb\.so\.1|libxcb-dri.*|libdrm\.so\..*"
    r"|libwayland-(client|cursor|egl|server)\.so\..*)$"
)
WAYLAND_ONLY = re.compile(r"^libwayland-(cursor|egl)\.so\..*$")  # absent on X11-only machines: fine


class Checks:
    def __init__(self) -> None:
        self.failures: list[str] = []
        self.figures: list[str] = []

    def ok(self, condition: bool, what: str) -> bool:
        print(("  ok    " if condition else "  FAIL  ") + what, flush=True)
        if not condition:
            self.failures.append(what)
        return condition

    def figure(self, text: str) -> None:
        print("  ..    " + text, flush=True)
        self.figures.append(text)


def bare_env(home: Path, **extra: str) -> dict[str, str]:
    runtime = home / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", "XDG_RUNTIME_DIR": str(runtime),
           "QT_QPA_PLATFORM": "offscreen"}
    env.update(extra)
    return env


def run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 120) -> tuple[int, str, float]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    noise = ("propagateSizeHints",)
    err = "\n".join(line for line in proc.stderr.splitlines() if not any(n in line for n in noise))
    return proc.returncode, (proc.stdout + ("\n" + err if err else "")).strip(), time.perf_counter() - t0


def verdict(output: str) -> str:
    match = re.search(r"llmplan self-test: window up in [\d.]+ s[^;]*; (.*)", output)
    return match.group(1).strip() if match else ""


def check_cli(c: Checks, app: Path, env: dict[str, str], cwd: Path) -> None:
    print("command line", flush=True)
    version = bundle_meta.read_version()
    rc, out, _ = run([str(app / "llmplan-cli"), "--version"], env, cwd)
    c.ok(rc == 0 and out == f"llmplan {version}", f"llmplan-cli --version -> {out!r} (want 'llmplan {version}')")
    rc, out, _ = run([str(app / "llmplan"), "--version"], env, cwd)
    c.ok(rc == 0 and out == f"llmplan {version}", f"llmplan --version -> {out!r}")
    rc, out, _ = run([str(app / "llmplan-cli"), "catalog", "models"], env, cwd)
    shipped = len(list((ROOT / "catalogs" / "models").glob("*.json")))
    rows = [line for line in out.splitlines()[1:] if line.strip()]
    c.ok(rc == 0 and len(rows) >= shipped and any("meta-llama/" in r for r in rows),
         f"llmplan-cli catalog models lists {len(rows)} models (shipped catalog files: {shipped})")


def check_examples(c: Checks, app: Path, env: dict[str, str], cwd: Path) -> None:
    print("example plans: bundle vs source tree", flush=True)
    src_env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    for plan in EXAMPLES:
        rc_b, out_b, secs = run([str(app / "llmplan"), "--self-test", str(plan)], env, cwd)
        rc_s, out_s, _ = run([sys.executable, "-m", "llmplan.gui", "--self-test", str(plan)], src_env, ROOT)
        same = (rc_b, verdict(out_b)) == (rc_s, verdict(out_s)) and verdict(out_b) != ""
        c.ok(same, f"{plan.name}: rc {rc_b}, {verdict(out_b) or out_b[-300:]!r} ({secs:.2f} s)"
             + ("" if same else f" -- source says rc {rc_s}, {verdict(out_s)!r}"))
        if plan.name == MUST_FIT:
            c.ok(rc_b == 0 and verdict(out_b).startswith("Fits:"), f"{plan.name} fits")
    broken = Path(cwd) / "broken.llmplan"
    broken.write_text("{not json", encoding="utf-8")
    rc, out, _ = run([str(app / "llmplan"), "--self-test", str(broken)], env, cwd, timeout=60)
    c.ok(rc == 1 and "Cannot open plan" in out, f"a broken plan fails cleanly (rc {rc}), no modal box hangs")


def png_looks_right(path: Path) -> tuple[bool, str]:
    """Width, height and colour count of a screenshot (a blank or tiny image fails)."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication, QImage

    _app = QGuiApplication.instance() or QGuiApplication([])
    image = QImage(str(path))
    if image.isNull():
        return False, "not a readable PNG"
    colours = {image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)}
    good = image.width() >= 800 and image.height() >= 500 and len(colours) >= 50
    return good, f"{image.width()}x{image.height()} px, {len(colours)} colours on a 7-px grid"


def check_screenshot(c: Checks, app: Path, env: dict[str, str], cwd: Path, keep: Path) -> None:
    print("screenshot", flush=True)
    plan = ROOT / "resources" / "examples" / MUST_FIT
    times = []
    for i in range(3):
        shot = cwd / f"shot{i}.png"
        rc, out, secs = run([str(app / "llmplan"), "--screenshot", str(shot), str(plan)], env, cwd)
        times.append(secs)
        if not c.ok(rc == 0 and shot.is_file(), f"llmplan --screenshot exits {rc} and writes a PNG"):
            print(out)
            return
    good, what = png_looks_right(shot)
    c.ok(good, f"screenshot is a full window: {what}")
    keep.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(shot, keep)
    c.figure(f"start to screenshot and exit: median {statistics.median(times):.2f} s of 3 runs "
             f"({', '.join(f'{t:.2f}' for t in times)}; includes the wait until the window has settled); kept {keep}")
    if shutil.which("xvfb-run"):  # the real X11 plugin and the xcb libraries the bundle carries
        shot = cwd / "shot-xcb.png"
        rc, out, secs = run(["xvfb-run", "-a", "-s", "-screen 0 1600x1000x24", str(app / "llmplan"),
                             "--screenshot", str(shot), str(plan)], dict(env, QT_QPA_PLATFORM="xcb"), cwd)
        good, what = png_looks_right(shot) if shot.is_file() else (False, out[-400:])
        c.ok(rc == 0 and good, f"under Xvfb (xcb plugin): rc {rc}, {what}, {secs:.2f} s")
    else:
        c.figure("xvfb-run not installed: skipped the X11 (xcb) run (apt: xvfb xauth)")


def check_desktop(c: Checks, app: Path, home: Path, cwd: Path) -> None:
    print("desktop integration", flush=True)
    data, config = home / "xdg-data", home / "xdg-config"
    env = bare_env(home, XDG_DATA_HOME=str(data), XDG_CONFIG_HOME=str(config),
                   XDG_DATA_DIRS=f"{data}:/usr/local/share:/usr/share")
    rc, out, _ = run([str(app / "desktop" / "install-desktop.sh")], env, cwd)
    if not c.ok(rc == 0, f"install-desktop.sh exits {rc}"):
        print(out)
        return
    installed = data / "applications" / f"{bundle_meta.APP_ID}.desktop"
    entry = desktop_entry.read(installed)
    c.ok(bundle_meta.PLAN_MIME in entry.get("MimeType", "").split(";"), "desktop entry lists application/x-llmplan")
    plan = cwd / "double-clicked plan.llmplan"  # a space, as real file names have
    shutil.copy(ROOT / "resources" / "examples" / MUST_FIT, plan)
    argv = desktop_entry.command_for(entry, [str(plan)])
    c.ok(argv == [str(app / "llmplan"), str(plan)], f"Exec expands to {argv}")
    rc, out, _ = run([*argv, "--self-test"], env, cwd)
    c.ok(rc == 0 and "Fits:" in verdict(out), f"opening the plan through the entry: {verdict(out) or out!r}")
    globs = (data / "mime" / "globs2").read_text(encoding="utf-8") if (data / "mime" / "globs2").exists() else ""
    c.ok(f"{bundle_meta.PLAN_MIME}:*.llmplan" in globs, "update-mime-database registered *.llmplan")
    for size in (16, 48, 256):
        icon = data / "icons" / "hicolor" / f"{size}x{size}" / "apps" / f"{bundle_meta.APP_ID}.png"
        c.ok(icon.is_file(), f"hicolor {size}x{size} icon installed")
    if shutil.which("gio") and shutil.which("xdg-mime"):
        gnome = dict(env, XDG_CURRENT_DESKTOP="GNOME")  # xdg-mime asks gio (shared-mime-info) there
        _, kind, _ = run(["xdg-mime", "query", "filetype", str(plan)], gnome, cwd)
        c.ok(kind == bundle_meta.PLAN_MIME, f"xdg-mime query filetype -> {kind!r}")
        no_ext = cwd / "plan-without-extension"
        shutil.copy(plan, no_ext)
        _, kind, _ = run(["xdg-mime", "query", "filetype", str(no_ext)], gnome, cwd)
        c.ok(kind == bundle_meta.PLAN_MIME, f"a plan without the extension, by its content -> {kind!r}")
        _, default, _ = run(["xdg-mime", "query", "default", bundle_meta.PLAN_MIME], gnome, cwd)
        c.ok(default == installed.name, f"xdg-mime query default -> {default!r}")
    else:
        c.figure("xdg-mime/gio not installed: skipped the xdg-mime queries (apt: xdg-utils libglib2.0-bin)")
    for tool, args in (("desktop-file-validate", [str(installed)]),
                       ("appstreamcli", ["validate", "--no-net",
                                         str(data / "metainfo" / f"{bundle_meta.APP_ID}.metainfo.xml")])):
        if shutil.which(tool):
            rc, out, _ = run([tool, *args], env, cwd)
            c.ok(rc == 0, f"{tool} accepts the installed file" + ("" if rc == 0 else f": {out}"))
        else:
            c.figure(f"{tool} not installed: skipped (apt: desktop-file-utils / appstream)")
    rc, _, _ = run([str(app / "desktop" / "install-desktop.sh"), "--uninstall"], env, cwd)
    leftovers = [p for p in data.rglob("*") if p.is_file() and "llmplan" in p.name.lower()]
    c.ok(rc == 0 and not installed.exists() and not leftovers, f"--uninstall removes everything ({leftovers})")


def check_system_libraries(c: Checks, app: Path) -> None:
    print("system libraries the bundle needs from the target", flush=True)
    internal = app / "_internal"
    search = f"{internal}:{internal / 'PySide6' / 'Qt' / 'lib'}"
    external: dict[str, set[str]] = {}
    for path in app.rglob("*"):
        if not path.is_file() or path.is_symlink():
            continue
        with path.open("rb") as fh:
            if fh.read(4) != b"\x7fELF":
                continue
        out = subprocess.run(["ldd", str(path)], capture_output=True, text=True,
                             env={"LD_LIBRARY_PATH": search, "PATH": "/usr/bin:/bin"}).stdout
        for line in out.splitlines():
            match = re.match(r"\s*(\S+) => (not found|(\S+))", line)
            if match and (match.group(2) == "not found" or not match.group(3).startswith(str(app))):
                external.setdefault(match.group(1), set()).add(path.name)
    unexpected = sorted(n for n in external if not SYSTEM_LIBS.match(n))
    c.ok(not unexpected, "only documented system libraries are needed: "
         + ", ".join(sorted(external)) + (f"; UNEXPECTED: {unexpected}" if unexpected else ""))
    missing_here = sorted(n for n in external if not _resolvable(n) and not WAYLAND_ONLY.match(n))
    c.ok(not missing_here, f"every needed system library resolves on this machine {missing_here or ''}")


@functools.cache
def _system_library_names() -> frozenset[str]:
    out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    return frozenset(line.split()[0] for line in out.splitlines()[1:] if line.strip())


def _resolvable(name: str) -> bool:
    return name in _system_library_names()


def check_wheel(c: Checks, tmp: Path, version: str) -> None:
    print("wheel in a fresh virtual environment", flush=True)
    wheel = ROOT / "dist" / f"llmplan-{version}-py3-none-any.whl"
    if not c.ok(wheel.is_file(), f"{wheel.name} built"):
        return
    venv = tmp / "wheel-venv"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                          f"{wheel}[gui]"], capture_output=True, text=True, timeout=600)
    if not c.ok(pip.returncode == 0, f"pip install {wheel.name}[gui] ({time.perf_counter() - t0:.0f} s)"):
        print(pip.stderr[-1000:])
        return
    home = tmp / "wheel-home"
    home.mkdir()
    env = bare_env(home)
    rc, out, _ = run([str(venv / "bin" / "llmplan-cli"), "catalog", "models"], env, home)
    c.ok(rc == 0 and "meta-llama/" in out, f"installed llmplan-cli catalog models: rc {rc}, {len(out.splitlines())} lines")
    plan = ROOT / "resources" / "examples" / MUST_FIT
    rc, out, _ = run([str(venv / "bin" / "llmplan"), "--self-test", str(plan)], env, home)
    c.ok(rc == 0 and verdict(out).startswith("Fits:"), f"installed llmplan --self-test: {verdict(out) or out[-300:]!r}")
    rc, out, _ = run([str(venv / "bin" / "python"), "-c",
                      "import llmplan.resources_path as r; print(r.catalogs_dir()); print(r.resources_dir())"], env, home)
    c.ok(rc == 0 and all("site-packages" in line for line in out.splitlines()),
         f"catalogs and resources come from the installed package: {out.splitlines()}")


def check_chroot(c: Checks, app: Path, root: Path) -> None:
    print(f"clean root {root}", flush=True)
    target = root / "opt" / "llmplan-dist-check"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(app, target, symlinks=True)
    plan = target / "plan.llmplan"
    shutil.copy(ROOT / "resources" / "examples" / MUST_FIT, plan)
    inside = "/opt/llmplan-dist-check"
    env = ["env", "-i", "PATH=/usr/bin:/bin", "HOME=/root", "LANG=C.UTF-8", "QT_QPA_PLATFORM=offscreen"]
    try:
        for argv, want in (([f"{inside}/llmplan", "--self-test", f"{inside}/plan.llmplan"], "Fits:"),
                           ([f"{inside}/llmplan-cli", "catalog", "models"], "meta-llama/"),
                           ([f"{inside}/llmplan", "--screenshot", f"{inside}/shot.png", f"{inside}/plan.llmplan"], "")):
            proc = subprocess.run(["chroot", str(root), *env, *argv], capture_output=True, text=True, timeout=120)
            c.ok(proc.returncode == 0 and want in proc.stdout,
                 f"in the clean root: {Path(argv[0]).name} {argv[1]} -> rc {proc.returncode}"
                 + ("" if proc.returncode == 0 else f": {proc.stderr[-400:]}"))
        good, what = png_looks_right(target / "shot.png")
        c.ok(good, f"clean-root screenshot: {what}")
        shutil.copy(target / "shot.png", ROOT / "dist" / "dist-check" / "screenshot-clean-root.png")
        if (root / "usr" / "bin" / "xvfb-run").exists():
            proc = subprocess.run(["chroot", str(root), *env[:-1], "QT_QPA_PLATFORM=xcb", "xvfb-run", "-a", "-s",
                                   "-screen 0 1600x1000x24", f"{inside}/llmplan", "--screenshot",
                                   f"{inside}/shot-xcb.png", f"{inside}/plan.llmplan"],
                                  capture_output=True, text=True, timeout=120)
            good, what = png_looks_right(target / "shot-xcb.png") if proc.returncode == 0 else (False, proc.stderr[-400:])
            c.ok(good, f"clean root under Xvfb (xcb plugin): {what}")
    finally:
        shutil.rmtree(target, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tarball", type=Path, help="default: dist/llmplan-VERSION-linux-ARCH.tar.gz")
    parser.add_argument("--chroot", type=Path, help="also run inside this bare Debian root (needs root)")
    parser.add_argument("--no-wheel", action="store_true", help="skip installing the wheel in a fresh venv")
    args = parser.parse_args(argv)
    version = bundle_meta.read_version()
    tarball = args.tarball or ROOT / "dist" / f"llmplan-{version}-linux-{os.uname().machine}.tar.gz"
    if not tarball.is_file():
        print(f"dist-check: {tarball} not found; run 'make dist' first", file=sys.stderr)
        return 2
    c = Checks()
    with tempfile.TemporaryDirectory(prefix="llmplan-dist-check-") as tmp_name:
        tmp = Path(tmp_name)
        t0 = time.perf_counter()
        with tarfile.open(tarball) as tar:
            tar.extractall(tmp / "unpacked", filter="tar")
        app = tmp / "unpacked" / f"llmplan-{version}"
        c.figure(f"{tarball.name}: {tarball.stat().st_size / 2**20:.0f} MiB packed, "
                 f"{sum(p.lstat().st_size for p in app.rglob('*') if not p.is_dir()) / 2**20:.0f} MiB unpacked, "
                 f"unpacked in {time.perf_counter() - t0:.1f} s")
        home, work = tmp / "home", tmp / "work"
        home.mkdir()
        work.mkdir()
        env = bare_env(home)
        check_cli(c, app, env, work)
        check_examples(c, app, env, work)
        check_screenshot(c, app, env, work, ROOT / "dist" / "dist-check" / "screenshot.png")
        check_desktop(c, app, home, work)
        check_system_libraries(c, app)
        if not args.no_wheel:
            check_wheel(c, tmp, version)
        if args.chroot:
            check_chroot(c, app, args.chroot)
    print(f"\ndist-check: {len(c.failures)} failed" + "".join(f"\n  - {f}" for f in c.failures))
    return 1 if c.failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
