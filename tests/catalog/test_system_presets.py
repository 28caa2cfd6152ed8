"""The shipped system presets: every number cited, derived rates right, user overrides work."""

import pytest

from llmplan.catalog.system_presets import default_system_settings, load_system_catalog, system_problems
from llmplan.errors import CatalogError


@pytest.fixture(autouse=True)
def _no_user_data(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))


def test_every_preset_cites_a_source():
    cat = load_system_catalog()
    entries = [*cat.storage.values(), *cat.failures.values()]
    assert entries
    assert all(len(e.source) > 20 for e in entries)
    for table in (cat.pue, cat.electricity_price, cat.grid_intensity):
        assert all(len(e["source"]) > 20 for e in table.values())
    for key in ("gpu_power", "pipeline", "host", "checkpoint"):
        assert len(cat.tables[key]["source"]) > 20


def test_storage_kinds_cover_the_brief():
    kinds = {s.kind for s in load_system_catalog().storage.values()}
    assert {"local-nvme", "raid0-nvme", "parallel-fs", "nfs", "object-store"} <= kinds


def test_llama3_failure_rate_is_derived_from_the_paper_counts():
    # Llama 3 paper §3.3.4: 466 interruptions (419 unexpected) in 54 days on 16,384 H100s.
    f = load_system_catalog().failures
    assert f["llama3-405b-all"].per_gpu_hour == pytest.approx(466 / (54 * 24 * 16384))
    assert f["llama3-405b-all"].per_gpu_hour == pytest.approx(2.195e-5, rel=1e-3)
    assert f["llama3-405b-unexpected"].per_gpu_hour == pytest.approx(419 / (54 * 24 * 16384))


def test_opt_failure_rate_is_derived_from_its_job_mtbf():
    # OPT-175B: job mean time to interrupt 7.5 h on 992 A100s (Lockwood's table, from the OPT logbook).
    f = load_system_catalog().failures["opt-175b"]
    assert f.per_gpu_hour == pytest.approx(1 / (7.5 * 992))
    assert f.per_gpu_hour / load_system_catalog().failures["llama3-405b-all"].per_gpu_hour == pytest.approx(6.1, abs=0.1)


def test_named_defaults():
    s = default_system_settings()
    assert s.storage.id == "parallel-fs-tectonic"
    assert s.storage.write_aggregate == 2e12  # Llama 3 §3.3.1: 2 TB/s sustained
    assert s.power.pue == 1.58  # Uptime Institute 2023 average
    assert s.grid.kg_co2_per_kwh == pytest.approx(0.86 * 0.45359237, rel=1e-3)  # EIA 2022: 0.86 lb/kWh
    assert s.grid.price_per_kwh == 0.0806  # EIA 2023 industrial average
    assert s.power.node_overhead_watts_per_gpu == pytest.approx((8400 - 8 * 700) / 8)  # Latif et al. 8.4 kW node


def test_choosing_presets_by_id():
    s = default_system_settings(storage="nfs-100gbe", pue="it-only", failures="llama3-405b-unexpected",
                                data_storage="object-store-s3")
    assert s.storage.bandwidth("write", 100) == 12.5e9  # the server's 100 GbE caps the job
    assert s.storage.bandwidth("write", 2) == 6.25e9  # two 25 GbE clients
    assert s.power.pue == 1.0
    assert s.data_store.id == "object-store-s3"


def test_unknown_preset_names_the_choices():
    with pytest.raises(CatalogError, match=r"unknown storage preset 'tape'.*local-nvme-gen4"):
        default_system_settings(storage="tape")


def test_user_entry_overrides_the_shipped_one(tmp_path):
    (tmp_path / "system").mkdir()
    (tmp_path / "system" / "mine.toml").write_text(
        '[[storage]]\nid = "local-nvme-gen4"\nname = "my drive"\nkind = "local-nvme"\n'
        'read_per_node = 1e9\nwrite_per_node = 5e8\nsource = "my own fio measurement, 2026"\n'
        '[defaults]\nstorage = "local-nvme-gen4"\n'
    )
    s = default_system_settings()
    assert s.storage.name == "my drive"
    assert s.storage.write_per_node == 5e8


def _assert_skipped(reason: str) -> None:
    """Issue 17 #1: a bad user file is skipped with its reason; the shipped presets keep working."""
    assert "nvme" in " ".join(load_system_catalog().storage)  # the shipped catalog still loads
    (problem,) = system_problems()
    assert reason in problem and "skipped" in problem
    default_system_settings()


def test_user_entry_without_source_is_refused(tmp_path):
    (tmp_path / "system").mkdir()
    (tmp_path / "system" / "bad.toml").write_text(
        '[[failure_rate]]\nid = "x"\nname = "x"\nper_gpu_hour = 1e-5\n')
    _assert_skipped("has no 'source'")


def test_broken_toml_is_a_catalog_error(tmp_path):
    (tmp_path / "system").mkdir()
    (tmp_path / "system" / "broken.toml").write_text("[[storage]\n")
    _assert_skipped("not valid TOML")


def test_storage_without_any_write_cap_is_refused(tmp_path):
    (tmp_path / "system").mkdir()
    (tmp_path / "system" / "ro.toml").write_text(
        '[[storage]]\nid = "ro"\nname = "read only"\nkind = "nfs"\nread_per_node = 1e9\nsource = "made up for a test"\n')
    _assert_skipped("write_per_node or write_aggregate")


def test_one_node_cannot_take_the_whole_parallel_file_system():
    s = default_system_settings(storage="parallel-fs-tectonic")
    assert s.storage.bandwidth("write", 1) == 50e9  # assumed 400 Gb/s front-end NIC
    assert s.storage.bandwidth("write", 2048) == 2e12  # Llama 3: 2 TB/s sustained


def test_user_values_replace_preset_numbers_and_say_so():
    s = default_system_settings(price_per_kwh=0.25, kg_co2_per_kwh=0.05, async_save=True, interval_s=1800,
                                restart_overhead_s=120, pretokenized=False)
    assert (s.grid.price_per_kwh, s.grid.kg_co2_per_kwh) == (0.25, 0.05)
    assert "set by the user" in s.grid.source
    assert s.checkpoint.async_save and s.checkpoint.interval_s == 1800 and s.checkpoint.restart_overhead_s == 120
    assert "set by the user" in s.checkpoint.source
    assert s.pipeline.pretokenized is False


def test_bad_user_value_is_a_catalog_error():
    with pytest.raises(CatalogError, match=r"invalid system setting 'price_per_kwh'.*greater than or equal"):
        default_system_settings(price_per_kwh=-1)


def test_offload_drives_default_to_the_node_raid():
    assert default_system_settings().offload_storage.id == "raid0-nvme-8x-gen4"
    assert default_system_settings(offload_storage="local-nvme-gen4").offload_storage.id == "local-nvme-gen4"
