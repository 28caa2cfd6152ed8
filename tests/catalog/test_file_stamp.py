"""Cached catalogs are re-read when a user file appears or changes (the GUI must not show stale presets)."""

import os

from llmplan.catalog.engines import load_engine_profiles
from llmplan.catalog.system_presets import load_system_catalog


def test_engine_profiles_follow_a_user_file(tmp_path):
    user = tmp_path / "engines.toml"
    base = load_engine_profiles(user_file=user)
    assert load_engine_profiles(user_file=user) == base  # cached, equal
    user.write_text('[vllm]\ngpu_memory_utilization = 0.5\n', encoding="utf-8")
    assert load_engine_profiles(user_file=user)["vllm"].gpu_memory_utilization == 0.5
    user.write_text('[vllm]\ngpu_memory_utilization = 0.75\n', encoding="utf-8")
    os.utime(user, ns=(1, 1))  # even with an old modification time, the size/time stamp differs
    assert load_engine_profiles(user_file=user)["vllm"].gpu_memory_utilization == 0.75


def test_system_catalog_follows_a_user_file(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMPLAN_DATA_DIR", str(tmp_path))
    before = load_system_catalog()
    assert "my-nas" not in before.storage
    (tmp_path / "system").mkdir()
    (tmp_path / "system" / "mine.toml").write_text(
        '[[storage]]\nid = "my-nas"\nname = "My NAS"\nkind = "nfs"\nread_per_node = 1e9\nwrite_per_node = 5e8\n'
        'source = "measured with fio"\n', encoding="utf-8")
    assert "my-nas" in load_system_catalog().storage
