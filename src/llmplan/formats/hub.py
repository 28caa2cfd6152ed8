"""A model on the Hugging Face Hub, read through ``huggingface_hub`` without downloading its weights.

``fetch_hub_model(ref)`` asks the Hub (``HF_ENDPOINT``, the user's token from ``HF_TOKEN`` or the
``hf`` CLI's login) for, in order:

1. the repo tree (``HfApi.list_repo_tree``): every file and its size, at most ``MAX_TREE_ENTRIES``;
2. ``config.json`` (``hf_hub_download``, into huggingface_hub's own cache), refused above the
   config reader's size limit before it is downloaded; a LoRA repo's ``adapter_config.json``
   names its base model, whose config is used instead;
3. the safetensors headers (``HfApi.get_safetensors_metadata``: range reads of each shard's
   header): exact parameter counts and stored bytes per dtype;
4. for GGUF repos, the ``.gguf`` files grouped by quant (split parts summed); when the repo has
   no config.json the architecture comes from the chosen file's GGUF header, read with an HTTP
   range request of at most ``GGUF_HEADER_READS[-1]`` bytes.

Nothing here runs unless a Hub reference was given. Every request is bounded
(``hub_transport``). When the Hub cannot be reached, ``HF_HUB_OFFLINE`` is set, or a request times
out, the summary cached by an earlier fetch (``hub_cache``) answers instead, saying so. Every other
failure becomes a ``HubError`` whose one line says what happened and what to do.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from llmplan.errors import ConfigError, HubError, LlmplanError
from llmplan.formats import hub_cache
from llmplan.formats.hub_files import (
    GgufChoice,
    SafetensorsTotals,
    gguf_choices,
    pick_gguf,
    safetensors_totals,
)
from llmplan.formats.hub_ref import HubRef

MAX_TREE_ENTRIES = 20_000  # the largest model repos (one folder per quant, many shards) hold a few thousand files
GGUF_HEADER_READS = (8 * 1024 * 1024, 48 * 1024 * 1024)  # a 262k-token vocabulary makes a header of ~15 MB
SITE = "https://huggingface.co"
TOKEN_HELP = "set HF_TOKEN to a token from https://huggingface.co/settings/tokens, or run `hf auth login`"

Progress = Callable[[float, str], None]


class HubCancelled(LlmplanError):
    """The person cancelled the fetch (the app's Cancel button)."""


@dataclass(frozen=True)
class HubModel:
    """What the Hub says about one model repo (at one revision, with one GGUF file chosen)."""

    repo: str
    revision: str | None = None
    commit: str | None = None
    config: dict[str, Any] | None = None
    config_source: str = ""  # "config.json", "GGUF header of FILE", "config.json of BASE (adapter)"
    safetensors: SafetensorsTotals | None = None
    gguf: tuple[GgufChoice, ...] = ()
    chosen: GgufChoice | None = None
    adapter_of: str | None = None
    file_count: int = 0
    from_cache: bool = False
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        st = self.safetensors
        return {
            "repo": self.repo, "revision": self.revision, "commit": self.commit, "config": self.config,
            "config_source": self.config_source, "adapter_of": self.adapter_of, "file_count": self.file_count,
            "safetensors": None if st is None else {"params_by_dtype": st.params_by_dtype,
                                                    "bytes_by_dtype": st.bytes_by_dtype, "files": st.files},
            "gguf": [c.as_dict() for c in self.gguf],
            "chosen": None if self.chosen is None else self.chosen.label,
            "from_cache": self.from_cache, "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HubModel:
        st = d.get("safetensors")
        gguf = tuple(GgufChoice.from_dict(c) for c in d.get("gguf") or ())
        chosen = d.get("chosen")
        return cls(
            repo=str(d["repo"]), revision=d.get("revision"), commit=d.get("commit"),
            config=d.get("config") if isinstance(d.get("config"), dict) else None,
            config_source=str(d.get("config_source") or ""),
            safetensors=None if not st else SafetensorsTotals({k: int(v) for k, v in st["params_by_dtype"].items()},
                                                              {k: int(v) for k, v in st["bytes_by_dtype"].items()},
                                                              int(st["files"])),
            gguf=gguf, chosen=next((c for c in gguf if c.label == chosen), None) if chosen else None,
            adapter_of=d.get("adapter_of"), file_count=int(d.get("file_count") or 0),
            from_cache=bool(d.get("from_cache")), notes=tuple(str(n) for n in d.get("notes") or ()),
        )


def fetch_hub_model(ref: HubRef, *, gguf_file: str | None = None, timeout: float = 10.0,
                    progress: Progress | None = None, cancelled: Callable[[], bool] | None = None) -> HubModel:
    """Read ``ref`` from the Hub (or from the cache when the Hub cannot answer). ``gguf_file``: a file
    path or quant label of a GGUF repo (else ``ref.file``). Raises ``HubError``/``ConfigError``/``HubCancelled``."""
    wanted = gguf_file or ref.file
    if hub_cache.offline():
        return _from_cache(ref, wanted, "HF_HUB_OFFLINE is set")
    try:
        import huggingface_hub  # noqa: F401  (an optional dependency: the "hub" extra)
    except ImportError:
        raise HubError("reading models from the Hugging Face Hub needs the huggingface_hub package: "
                       "pip install 'llmplan[hub]'") from None
    # httpx loads here, for a fetch: not with every plan that names the Hub (nor with the app's first paint)
    from llmplan.formats import hub_transport

    hub_transport.limits.timeout = timeout
    hub_transport.install()
    try:
        model = _Fetch(ref, wanted, timeout, progress, cancelled).run()
    except (hub_transport.HubUnreachable, hub_transport.HubTimedOut) as exc:
        return _from_cache(ref, wanted, _unreachable(exc, timeout))
    except (hub_transport.HubRateLimited, hub_transport.HubServerError) as exc:
        explained = _explain(exc, ref)  # the Hub is there but will not answer now: a cached copy still helps
        cached = _cached_summary(ref, wanted, f"the Hub answered {exc}")
        if cached is None:
            raise explained from None
        return cached
    except LlmplanError:
        raise
    except Exception as exc:  # huggingface_hub's own exceptions: named one by one in _explain
        if _is_offline_error(exc):
            return _from_cache(ref, wanted, "huggingface_hub is in offline mode (HF_HUB_OFFLINE)")
        raise _explain(exc, ref) from None
    hub_cache.save(ref.repo, ref.revision, wanted, model.as_dict())
    return model


def _unreachable(exc: Exception, timeout: float) -> str:
    from llmplan.formats import hub_transport

    if isinstance(exc, hub_transport.HubTimedOut):
        return f"the Hub at {hub_cache.endpoint()} did not answer within {timeout:g} s"
    return f"cannot reach the Hub at {hub_cache.endpoint()} ({str(exc)[:120] or 'no connection'})"


def _is_offline_error(exc: Exception) -> bool:
    from huggingface_hub.errors import OfflineModeIsEnabled

    return isinstance(exc, OfflineModeIsEnabled)


def _cached_summary(ref: HubRef, wanted: str | None, why: str) -> HubModel | None:
    data = hub_cache.load(ref.repo, ref.revision, wanted)
    if data is None:
        return None
    try:
        model = HubModel.from_dict(data)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return replace(model, from_cache=True, notes=(*model.notes, f"{why}: using the copy cached earlier"))


def _from_cache(ref: HubRef, wanted: str | None, why: str) -> HubModel:
    model = _cached_summary(ref, wanted, why)
    if model is not None:
        return model
    config = _config_from_hf_cache(ref)
    if config is not None:
        return HubModel(ref.repo, ref.revision, config=config, config_source="config.json (huggingface_hub cache)",
                        from_cache=True, notes=(f"{why}: using config.json from the huggingface_hub cache",))
    raise HubError(f"{ref.label()}: {why}, and it is not in the cache; connect to the network (or unset "
                   "HF_HUB_OFFLINE) and try again")


def _config_from_hf_cache(ref: HubRef) -> dict[str, Any] | None:
    try:
        from huggingface_hub import try_to_load_from_cache

        path = try_to_load_from_cache(ref.repo, "config.json", cache_dir=hub_cache.hf_cache_dir(),
                                      revision=ref.revision)
    except Exception:  # an unreadable cache is the same as no cache
        return None
    if not isinstance(path, str):
        return None
    from llmplan.formats.hf_config import load_config_file

    try:
        return load_config_file(path)
    except ConfigError:
        return None


def _explain(exc: Exception, ref: HubRef) -> HubError:
    """One line per failure the Hub can give, naming the fix."""
    from huggingface_hub import errors as e

    from llmplan.formats import hub_transport as t

    page = f"{SITE}/{ref.repo}"
    if isinstance(exc, e.GatedRepoError):
        return HubError(f"{ref.repo} is gated: accept its terms on {page} with your Hugging Face account, then "
                        f"give llmplan your token ({TOKEN_HELP})")
    if isinstance(exc, e.DisabledRepoError):
        return HubError(f"{ref.repo}: the Hub has disabled access to this repository")
    if isinstance(exc, e.RepositoryNotFoundError):
        return HubError(f"{ref.repo}: no such model on the Hub (check the spelling on {SITE}/models); if it is "
                        f"private, {TOKEN_HELP}")
    if isinstance(exc, e.RevisionNotFoundError):
        return HubError(f"{ref.repo} has no revision '{ref.revision}'; use a branch, tag or commit listed on "
                        f"{page}/tree/main")
    if isinstance(exc, e.RemoteEntryNotFoundError):
        return HubError(f"{ref.label()}: a file the repo lists could not be found on the Hub; try again later")
    if isinstance(exc, t.HubRateLimited):
        wait = f" in {exc.retry_after} s" if exc.retry_after is not None else " in a minute"
        return HubError(f"{ref.repo}: the Hub is limiting requests (HTTP 429); try again{wait}, or log in for a "
                        f"higher limit ({TOKEN_HELP})")
    if isinstance(exc, t.HubServerError):
        return HubError(f"{ref.repo}: the Hub answered {exc} (a server error); try again later")
    if isinstance(exc, t.HubResponseTooLarge):
        return HubError(f"{ref.repo}: {exc}; llmplan reads only headers and small files, so this repo's files "
                        "are not what they claim to be")
    if isinstance(exc, e.SafetensorsParsingError | e.NotASafetensorsRepoError):
        return HubError(f"{ref.repo}: a safetensors header is malformed ({str(exc).splitlines()[0][:160]})")
    if isinstance(exc, e.HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status in (401, 403):
            return HubError(f"{ref.repo}: the Hub refused access (HTTP {status}); if the repo is gated or private, "
                            f"request access on {page} and {TOKEN_HELP}")
        return HubError(f"{ref.repo}: the Hub answered HTTP {status}: {str(exc).splitlines()[0][:160]}")
    if isinstance(exc, e.FileMetadataError):
        return HubError(f"{hub_cache.endpoint()} does not answer like the Hugging Face Hub; check HF_ENDPOINT")
    if isinstance(exc, ValueError | OSError):  # bad JSON in the tree, an unwritable cache, ...
        return HubError(f"{ref.repo}: {type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}")
    return HubError(f"{ref.repo}: unexpected answer from the Hub ({type(exc).__name__})")


class _Fetch:
    """One fetch's steps, reporting progress and checking for cancel between requests."""

    def __init__(self, ref: HubRef, wanted: str | None, timeout: float, progress: Progress | None,
                 cancelled: Callable[[], bool] | None, depth: int = 0) -> None:
        from huggingface_hub import HfApi

        self.ref, self.wanted, self.timeout, self.depth = ref, wanted, timeout, depth
        self._progress, self._cancelled = progress, cancelled
        self.api = HfApi(endpoint=hub_cache.endpoint())
        self.commit: str | None = None

    def step(self, fraction: float, text: str) -> None:
        if self._cancelled and self._cancelled():
            raise HubCancelled(f"{self.ref.repo}: cancelled")
        if self._progress:
            self._progress(fraction, text)

    def run(self) -> HubModel:
        ref = self.ref
        self.step(0.05, f"listing the files of {ref.repo}")
        files = self.tree()
        self.step(0.3, "reading config.json")
        if "config.json" not in files and "adapter_config.json" in files and self.depth == 0:
            return self.adapter(files)
        config, source = (self.config(files), "config.json") if "config.json" in files else (None, "")
        totals = None
        if any(p.endswith(".safetensors") for p in files):
            self.step(0.5, "reading the safetensors headers")
            md = self.api.get_safetensors_metadata(ref.repo, revision=ref.revision, timeout=self.timeout)
            totals = safetensors_totals(md.files_metadata)
        choices = gguf_choices(files)
        chosen = pick_gguf(choices, self.wanted)
        if self.wanted and chosen is None:
            known = ", ".join(c.label for c in choices if not c.projector) or "none"
            raise HubError(f"{ref.repo} has no GGUF file or quant '{self.wanted}'; it has: {known}")
        notes: list[str] = []
        if config is None:
            usable = [c for c in choices if not c.projector]
            header_of = chosen or (usable[0] if usable else None)
            if header_of is None:
                some = ", ".join(sorted(files)[:8]) or "no files"
                raise HubError(f"{ref.repo}: neither a config.json nor a .gguf file to size the model from "
                               f"(the repo holds: {some})")
            self.step(0.7, f"reading the GGUF header of {header_of.files[0]}")
            config = self.gguf_config(header_of.files[0], files[header_of.files[0]])
            source = f"GGUF header of {header_of.files[0]}"
        if chosen is not None and not chosen.complete:
            notes.append(f"{chosen.label}: {len(chosen.files)} of {chosen.parts_expected} split parts are in the "
                         "repo; the size counts only those")
        self.step(1.0, "done")
        return HubModel(ref.repo, ref.revision, self.commit, config, source, totals, choices, chosen,
                        file_count=len(files), notes=tuple(notes))

    def tree(self) -> dict[str, int]:
        files: dict[str, int] = {}
        for n, item in enumerate(self.api.list_repo_tree(self.ref.repo, revision=self.ref.revision, recursive=True)):
            if n >= MAX_TREE_ENTRIES:
                raise HubError(f"{self.ref.repo}: more than {MAX_TREE_ENTRIES:,} files; llmplan reads model repos, "
                               "not datasets or archives")
            size = getattr(item, "size", None)
            if isinstance(size, int) and not isinstance(size, bool) and size >= 0:
                files[str(item.path)] = size
            if n % 200 == 0:
                self.step(0.05, f"listing the files of {self.ref.repo} ({n:,} so far)")
        return files

    def download(self, name: str, size: int) -> str:
        from huggingface_hub import hf_hub_download

        from llmplan.formats.hf_config import MAX_CONFIG_BYTES

        if size > MAX_CONFIG_BYTES:
            raise HubError(f"{self.ref.repo}: {name} is {size:,} bytes, far too large for a model config "
                           f"(limit {MAX_CONFIG_BYTES:,}); the repo is broken or not a model")
        path = hf_hub_download(self.ref.repo, name, revision=self.ref.revision, cache_dir=hub_cache.hf_cache_dir(),
                               endpoint=hub_cache.endpoint(), etag_timeout=self.timeout)
        snapshot = Path(path).parent.name
        if len(snapshot) == 40 and all(c in "0123456789abcdef" for c in snapshot):
            self.commit = self.commit or snapshot
        return str(path)

    def config(self, files: dict[str, int]) -> dict[str, Any]:
        from llmplan.formats.hf_config import load_config_file

        path = self.download("config.json", files["config.json"])
        try:
            return load_config_file(path)
        except ConfigError as exc:
            raise ConfigError(f"{self.ref.repo}: config.json: {str(exc).split(': ', 1)[-1]}") from None

    def adapter(self, files: dict[str, int]) -> HubModel:
        from llmplan.formats.hf_config import load_config_file
        from llmplan.formats.hub_ref import HubRefError, parse_hub_ref

        cfg = load_config_file(self.download("adapter_config.json", files["adapter_config.json"]))
        base = cfg.get("base_model_name_or_path")
        try:
            base_ref = parse_hub_ref(str(base), require=True) if isinstance(base, str) else None
        except HubRefError:
            base_ref = None
        if base_ref is None:
            raise HubError(f"{self.ref.repo} is an adapter (adapter_config.json) whose base model "
                           f"{str(base)[:80]!r} is not a Hub repo id; open the base model instead")
        self.step(0.4, f"{self.ref.repo} is an adapter of {base_ref.repo}: reading the base model")
        inner = _Fetch(base_ref, None, self.timeout, self._progress, self._cancelled, depth=1).run()
        rank = cfg.get("r")
        note = (f"{self.ref.repo} is a {cfg.get('peft_type') or 'PEFT'} adapter"
                f"{f' (rank {rank})' if isinstance(rank, int) else ''} of {base_ref.repo}; the plan sizes the base "
                "model (choose a LoRA fine-tune or add the adapter's few weights yourself)")
        return replace(inner, repo=self.ref.repo, revision=self.ref.revision, commit=self.commit,
                       config_source=f"config.json of {base_ref.repo} (the adapter's base)", adapter_of=base_ref.repo,
                       notes=(*inner.notes, note))

    def gguf_config(self, name: str, size: int) -> dict[str, Any]:
        """The config a GGUF header describes, from a range read of the file's first bytes."""
        from huggingface_hub import get_session, hf_hub_url
        from huggingface_hub.utils import build_hf_headers, hf_raise_for_status

        from llmplan.formats.gguf_header import config_from_gguf, read_gguf_header_from

        url = hf_hub_url(self.ref.repo, name, revision=self.ref.revision, endpoint=hub_cache.endpoint())
        last: ConfigError | None = None
        for limit in GGUF_HEADER_READS:
            response = get_session().get(url, headers={**build_hf_headers(), "range": f"bytes=0-{limit - 1}"},
                                         timeout=self.timeout)
            hf_raise_for_status(response)
            self.commit = self.commit or response.headers.get("X-Repo-Commit")
            try:
                return config_from_gguf(read_gguf_header_from(io.BytesIO(response.content[:limit]), Path(name)))
            except ConfigError as exc:
                last = exc
                if "cut short" not in str(exc) or size <= limit:
                    break
            self.step(0.8, f"the GGUF header of {name} is longer: reading more of it")
        detail = str(last).split(": ", 1)[-1] if last else "unreadable"
        raise ConfigError(f"{self.ref.repo}: {name}: {detail}")
