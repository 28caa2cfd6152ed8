"""Load the "beyond the GPU" presets (``catalogs/system/*.toml``) and build ``SystemSettings``.

Shipped files are read first, then the user's own ``system/*.toml`` files in the user
data dir (``LLMPLAN_DATA_DIR`` in tests); a user entry with the same ``id`` replaces the
shipped one, and user ``[gpu_power]``/``[pipeline]``/``[host]``/``[checkpoint]``/
``[defaults]`` tables override single keys. Every entry must carry a ``source``: a number
without one is refused, so every default in a report can name where it came from.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llmplan.catalog.file_stamp import Stamp, files_stamp
from llmplan.catalog.snapshot import within_read
from llmplan.core.present import one_line
from llmplan.core.system.settings import (
    CheckpointOptions,
    FailureRate,
    GridProfile,
    HostProfile,
    PipelineProfile,
    PowerProfile,
    StoragePreset,
    SystemSettings,
)
from llmplan.errors import CatalogError
from llmplan.formats.bounded import load_toml
from llmplan.resources_path import catalogs_dir, user_data_dir

_LISTS = ("storage", "failure_rate", "pue", "electricity_price", "grid_intensity")
_TABLES = ("gpu_power", "pipeline", "host", "checkpoint", "defaults", "personal_defaults")


@dataclass(frozen=True, slots=True)
class SystemCatalog:
    """Every preset by id, and the named defaults."""

    storage: dict[str, StoragePreset]
    failures: dict[str, FailureRate]
    pue: dict[str, dict[str, Any]]
    electricity_price: dict[str, dict[str, Any]]
    grid_intensity: dict[str, dict[str, Any]]
    tables: dict[str, dict[str, Any]]

    @property
    def defaults(self) -> dict[str, Any]:
        return self.tables["defaults"]

    def defaults_for(self, personal: bool) -> dict[str, Any]:
        """The named defaults for a data-centre plan, or for a personal machine (its own table on top)."""
        return {**self.defaults, **self.tables.get("personal_defaults", {})} if personal else self.defaults


MAX_FILE_BYTES = 4 * 1024 * 1024  # preset files are a few KB; never read a huge file whole


def _read(path: Path) -> dict[str, Any]:
    return load_toml(path, MAX_FILE_BYTES, what="preset file", error=CatalogError)


_Lists = dict[str, dict[str, dict[str, Any]]]
_Tables = dict[str, dict[str, Any]]


def _merge(files: list[Path], lists: _Lists | None = None,
           tables: _Tables | None = None) -> tuple[_Lists, _Tables]:
    """``files`` merged over (copies of) ``lists``/``tables``, which are left unchanged."""
    lists = {k: dict((lists or {}).get(k, {})) for k in _LISTS}
    tables = {k: dict((tables or {}).get(k, {})) for k in _TABLES}
    for path in files:
        data = _read(path)
        for key in _LISTS:
            if not isinstance(data.get(key, []), list):
                raise CatalogError(f"{path}: '{key}' must be a list of [[{key}]] entries")
            for entry in data.get(key, []):
                if not isinstance(entry, dict) or not entry.get("id"):
                    raise CatalogError(f"{path}: every [[{key}]] entry needs an 'id'")
                if not entry.get("source"):
                    raise CatalogError(f"{path}: [[{key}]] '{entry['id']}' has no 'source'; cite where its "
                                       "numbers come from")
                lists[key][entry["id"]] = entry
        for key in _TABLES:
            if not isinstance(data.get(key, {}), dict):
                raise CatalogError(f"{path}: '{key}' must be a table [{key}]")
            tables[key].update(data.get(key, {}))
    return lists, tables


def _files() -> list[Path]:
    return _shipped_files() + _user_files()


def _shipped_files() -> list[Path]:
    return list(_shipped_listing())


@functools.cache  # the shipped folder's files do not come and go while the app runs (their edits still
def _shipped_listing() -> tuple[Path, ...]:  # show: files_stamp reads their sizes and times on every load)
    return tuple(sorted((catalogs_dir() / "system").glob("*.toml")))


def _user_files() -> list[Path]:
    # no is_dir() first: glob finds nothing in a missing folder, and checks it itself (one stat per estimate, not two)
    return sorted((user_data_dir() / "system").glob("*.toml"))


def _failure(entry: dict[str, Any]) -> FailureRate:
    e = dict(entry)
    if "per_gpu_hour" not in e:
        try:
            if "job_mtbf_hours" in e:  # a job's mean time between interruptions on `gpus` GPUs
                e["per_gpu_hour"] = 1.0 / (e["job_mtbf_hours"] * e["gpus"])
            else:  # interruption counts over a period
                e["per_gpu_hour"] = e["interruptions"] / (e["days"] * 24 * e["gpus"])
        except (KeyError, TypeError, ZeroDivisionError) as err:
            raise CatalogError(f"failure_rate '{e['id']}': give per_gpu_hour, or interruptions, days and gpus, "
                               f"or job_mtbf_hours and gpus (all > 0)") from err
    return FailureRate(**{k: e[k] for k in ("id", "name", "per_gpu_hour", "source") if k in e},
                       notes=e.get("notes", ""))


def load_system_catalog() -> SystemCatalog:
    """Shipped presets merged with the user's, validated; cached until a file changes.

    Each user file is merged and checked on its own (the presets validate, and the default settings
    still build from them); one that fails is skipped and listed in ``system_problems()``, so a typo
    in ``system/*.toml`` never stops the app or every estimate."""
    return _checked()[0]


def system_problems() -> list[str]:
    """The user's ``system/*.toml`` files that were skipped, and why."""
    return list(_checked()[1])


def _checked() -> tuple[SystemCatalog, tuple[str, ...]]:
    """The cached catalog and its problems, the files checked once per ``catalog.snapshot.catalog_read``."""
    return within_read("system", lambda: _cached_catalog(files_stamp(_files())))


@functools.lru_cache(maxsize=4)
def _cached_catalog(stamp: Stamp) -> tuple[SystemCatalog, tuple[str, ...]]:
    shipped = {str(p) for p in _shipped_files()}
    paths = [Path(p) for p, _, _ in stamp]
    lists, tables = _merge([p for p in paths if str(p) in shipped])
    catalog = _build(lists, tables)  # the shipped presets must be valid: an error here is a bug
    problems: list[str] = []
    for path in (p for p in paths if str(p) not in shipped):
        try:
            new_lists, new_tables = _merge([path], lists, tables)
            candidate = _build(new_lists, new_tables)
            default_system_settings(catalog=candidate)
            default_system_settings(catalog=candidate, personal=True)
        except CatalogError as exc:
            problems.append(one_line(f"{path}: skipped, {str(exc).removeprefix(f'{path}: ')}"))  # path said once
        except Exception as exc:  # user data never stops the app: any other failure skips the file
            problems.append(one_line(f"{path}: skipped, unusable ({type(exc).__name__}: {str(exc)[:200]})"))
        else:
            lists, tables, catalog = new_lists, new_tables, candidate
    return catalog, tuple(problems)


def _build(lists: _Lists, tables: _Tables) -> SystemCatalog:
    try:
        storage = {k: StoragePreset(**v) for k, v in lists["storage"].items()}
        failures = {k: _failure(v) for k, v in lists["failure_rate"].items()}
    except ValidationError as e:
        raise CatalogError(f"invalid system preset: {e.errors()[0]['msg']} ({e.errors()[0]['loc']})") from e
    return SystemCatalog(storage, failures, lists["pue"], lists["electricity_price"], lists["grid_intensity"],
                         tables)


def _pick(kind: str, table: dict[str, Any], wanted: str | None, default: str | None) -> Any:
    key = wanted or default
    if key not in table:
        known = ", ".join(sorted(table)) or "none"
        raise CatalogError(f"unknown {kind} preset '{key}'; choose one of: {known}")
    return table[key]


def _override(table: dict[str, Any], **values: Any) -> dict[str, Any]:
    out = dict(table)
    changed = {k: v for k, v in values.items() if v is not None}
    out.update(changed)
    if changed:
        out["source"] = f"{out.get('source', '')}; set by the user: {', '.join(sorted(changed))}"
    return out


def default_system_settings(*, storage: str | None = None, data_storage: str | None = None,
                            offload_storage: str | None = None,
                            failures: str | None = None, pue: str | None = None,
                            electricity_price: str | None = None, grid_intensity: str | None = None,
                            price_per_kwh: float | None = None, kg_co2_per_kwh: float | None = None,
                            async_save: bool | None = None, interval_s: float | None = None,
                            restart_overhead_s: float | None = None, pretokenized: bool | None = None,
                            catalog: SystemCatalog | None = None, personal: bool = False) -> SystemSettings:
    """``SystemSettings`` from the named presets, each falling back to the catalog's [defaults]
    (for a personal machine, ``personal=True``: [personal_defaults] over them, and a desktop's
    node overhead).

    The numeric keywords are the plan's own values (a user's electricity price, a fixed
    checkpoint interval...); when given they replace the preset's number and the source
    says "set by the user".

    The result is kept per catalog and arguments (``_SETTINGS``): the app asks for the same settings on
    every knob change, and building them validates a dozen models. A changed catalog file gives a new
    catalog object, so nothing stale is returned.
    """
    cat = catalog or load_system_catalog()
    key = (storage, data_storage, offload_storage, failures, pue, electricity_price, grid_intensity, price_per_kwh,
           kg_co2_per_kwh, async_save, interval_s, restart_overhead_s, pretokenized, personal)
    kept = _SETTINGS.get(key)
    if kept is not None and kept[0] is cat:
        return kept[1]
    settings = _settings(cat, personal, storage, data_storage, offload_storage, failures, pue, electricity_price,
                         grid_intensity, price_per_kwh, kg_co2_per_kwh, async_save, interval_s, restart_overhead_s,
                         pretokenized)
    if len(_SETTINGS) >= 64:
        _SETTINGS.clear()
    _SETTINGS[key] = (cat, settings)
    return settings


_SETTINGS: dict[tuple, tuple[SystemCatalog, SystemSettings]] = {}  # default_system_settings' results


def _settings(cat: SystemCatalog, personal: bool, storage, data_storage, offload_storage, failures, pue,
              electricity_price, grid_intensity, price_per_kwh, kg_co2_per_kwh, async_save, interval_s,
              restart_overhead_s, pretokenized) -> SystemSettings:
    d = cat.defaults_for(personal)
    power_t, pipe_t, host_t, ckpt_t = (cat.tables[k] for k in ("gpu_power", "pipeline", "host", "checkpoint"))
    if personal and "personal_overhead_watts_per_gpu" in power_t:
        power_t = {**power_t, "node_overhead_watts_per_gpu": power_t["personal_overhead_watts_per_gpu"]}
    pue_e = _pick("pue", cat.pue, pue, d.get("pue"))
    price_e = _pick("electricity_price", cat.electricity_price, electricity_price, d.get("electricity_price"))
    grid_e = _pick("grid_intensity", cat.grid_intensity, grid_intensity, d.get("grid_intensity"))
    try:
        return SystemSettings(
            storage=_pick("storage", cat.storage, storage, d.get("storage")),
            data_storage=_pick("storage", cat.storage, data_storage, None) if data_storage else None,
            offload_storage=_pick("storage", cat.storage, offload_storage, d.get("offload_storage"))
            if (offload_storage or d.get("offload_storage")) else None,
            failures=_pick("failure rate", cat.failures, failures, d.get("failures")),
            power=PowerProfile(pue=pue_e["value"], source=f"{power_t['source']}; PUE: {pue_e['source']}",
                               **{k: power_t[k] for k in ("idle_fraction", "saturation_mfu",
                                                          "node_overhead_watts_per_gpu")}),
            grid=GridProfile(
                price_per_kwh=price_e["usd_per_kwh"] if price_per_kwh is None else price_per_kwh,
                kg_co2_per_kwh=grid_e["kg_co2_per_kwh"] if kg_co2_per_kwh is None else kg_co2_per_kwh,
                source=("price: " + (price_e["source"] if price_per_kwh is None else "set by the user")
                        + "; CO2: " + (grid_e["source"] if kg_co2_per_kwh is None else "set by the user"))),
            pipeline=PipelineProfile(**_override(pipe_t, pretokenized=pretokenized)),
            host=HostProfile(**host_t),
            checkpoint=CheckpointOptions(**_override(ckpt_t, async_save=async_save, interval_s=interval_s,
                                                     restart_overhead_s=restart_overhead_s)),
        )
    except KeyError as e:
        raise CatalogError(f"catalogs/system: key {e} is missing from a default table; restore the shipped "
                           "file or fix your override") from e
    except ValidationError as e:
        err = e.errors()[0]
        field = _setting_name(e.title, tuple(err["loc"]))
        got = "" if err["type"] == "wrong_type" else f" (got {err.get('input')!r})"  # that message shows it
        raise CatalogError(f"invalid system setting '{field}': {err['msg']}{got}; fix the value or your "
                           "system/*.toml override") from e


# Where each settings model's fields come from in the files, to name them in a problem ('pipeline.pretokenized').
_TABLE_OF = {"PowerProfile": "gpu_power", "PipelineProfile": "pipeline", "HostProfile": "host",
             "CheckpointOptions": "checkpoint"}
_ENTRY_OF = {("PowerProfile", "pue"): "pue.value"}  # the grid's two numbers may be the plan's own: no name


def _setting_name(model: str, loc: tuple) -> str:
    """The file's name for a settings field: its [table] and key, or the [[list]] entry's key it is read from."""
    if loc and (model, loc[0]) in _ENTRY_OF:
        return ".".join([_ENTRY_OF[model, loc[0]], *map(str, loc[1:])])
    table = _TABLE_OF.get(model)
    return ".".join(str(p) for p in ((table,) if table else ()) + loc)
