"""A local stand-in for the Hugging Face Hub, for tests: a real HTTP server on 127.0.0.1 answering the
endpoints ``huggingface_hub`` really calls, with responses shaped like the Hub's.

Endpoints (as huggingface_hub 2.4 calls them):
- ``GET /api/models/ORG/NAME/tree/REV[/PATH]?recursive=&expand=``: a JSON list of
  ``{"type": "file", "oid", "size", "path", "lfs"}`` (and ``"directory"`` entries when not recursive),
  paginated with a GitHub-style ``Link: <...>; rel="next"`` header (``page_size`` entries a page);
- ``HEAD /ORG/NAME/resolve/REV/FILE``: ``X-Repo-Commit``, ``ETag``, ``Content-Length``;
- ``GET`` of the same URL, honouring ``Range: bytes=A-B`` (206 + ``Content-Range``), which is how
  safetensors headers and GGUF headers are read without the weights.

Failures, as the Hub answers them: an unknown repo 401 + ``X-Error-Code: RepoNotFound``; a gated repo's
files 401 (no token) or 403 (a token without access) + ``X-Error-Code: GatedRepo``; an unknown
revision 404 ``RevisionNotFound``; an unknown file 404 ``EntryNotFound``; per-repo modes "429"
(``Retry-After``), "500" and "stall" (accepts, then sends nothing until the server stops or
``stall_s`` passes). Files may be "virtual": a prefix of real bytes and a declared size, the rest
zeros, so a 5 GB GGUF costs nothing. Every request is logged in ``requests``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import socket
import struct
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

import pytest


@dataclass
class FakeFile:
    data: bytes
    size: int | None = None  # declared size when larger than ``data`` (the rest reads as zeros)

    @property
    def length(self) -> int:
        return self.size if self.size is not None else len(self.data)

    def read(self, start: int, end: int) -> bytes:  # inclusive end, like HTTP ranges
        end = min(end, self.length - 1)
        head = self.data[start:end + 1]
        return head + b"\0" * max(0, end + 1 - start - len(head))


@dataclass
class FakeRepo:
    files: dict[str, FakeFile]
    commit: str = ""
    gated: bool = False
    revisions: tuple[str, ...] = ("main",)

    def __post_init__(self) -> None:
        if not self.commit:
            digest = hashlib.sha1(json.dumps(sorted(self.files)).encode()).hexdigest()
            self.commit = digest
        self.revisions = (*self.revisions, self.commit)


@dataclass
class FakeHub:
    repos: dict[str, FakeRepo] = field(default_factory=dict)
    modes: dict[str, str] = field(default_factory=dict)  # repo -> "429" | "500" | "stall"
    tokens: set[str] = field(default_factory=set)  # tokens granted access to gated repos
    page_size: int = 1000
    stall_s: float = 20.0
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    url: str = ""

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._connections: list = []

    def add(self, repo: str, files: dict[str, bytes | FakeFile], **kw) -> FakeRepo:
        fr = FakeRepo({k: v if isinstance(v, FakeFile) else FakeFile(v) for k, v in files.items()}, **kw)
        self.repos[repo] = fr
        return fr

    def start(self) -> FakeHub:
        hub = self

        class Handler(_Handler):
            fake = hub

        self._stop.clear()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for sock in self._connections:  # keep-alive connections would otherwise go on answering
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._connections.clear()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def weight_bytes_sent(self) -> int:
        """Bytes of .gguf/.safetensors bodies served: headers only, if the client behaves."""
        return sum(int(r) for m, p, r in self.requests if r.isdigit() and p.endswith((".gguf", ".safetensors")))


_TREE = re.compile(r"^/api/models/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?$")
_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")


class _Handler(BaseHTTPRequestHandler):
    fake: FakeHub
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.fake._connections.append(self.connection)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    def do_GET(self) -> None:
        self._serve(head=False)

    # ---- helpers -------------------------------------------------------------------------
    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, head: bool = False) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)) if "Content-Length" not in (headers or {}) else
                         headers["Content-Length"])
        self.end_headers()
        if not head and body:
            self.wfile.write(body)

    def _error(self, status: int, code: str, message: str, head: bool, commit: str | None = None) -> None:
        headers = {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json"}
        if commit:
            headers["X-Repo-Commit"] = commit
        self._send(status, json.dumps({"error": message}).encode(), headers, head)

    def _serve(self, head: bool) -> None:
        fake = self.fake
        parts = urlsplit(self.path)
        path = parts.path
        rng = self.headers.get("Range") or self.headers.get("range") or ""
        m_tree, m_res = _TREE.match(path), _RESOLVE.match(path)
        m = m_tree or m_res
        repo_id = unquote(m.group(1)) if m else ""
        fake.requests.append((self.command, unquote(path), rng))
        if not m:
            return self._send(404, b"not found", {}, head)
        mode = fake.modes.get(repo_id)
        if mode == "stall":
            fake._stop.wait(fake.stall_s)
            self.close_connection = True
            return None
        if mode == "429":
            return self._send(429, b"rate limited", {"Retry-After": "17"}, head)
        if mode == "500":
            return self._send(500, b"boom", {}, head)
        repo = fake.repos.get(repo_id)
        if repo is None:
            return self._error(401, "RepoNotFound", "Repository not found", head)
        revision = unquote(m.group(2))
        if revision not in repo.revisions:
            return self._error(404, "RevisionNotFound", "Invalid rev id: " + revision, head)
        if m_tree:
            return self._tree(repo, unquote(m.group(3) or ""), parse_qs(parts.query), head)
        if repo.gated:
            auth = self.headers.get("authorization") or ""
            token = auth.removeprefix("Bearer ").strip()
            if token not in fake.tokens:
                status = 403 if token else 401
                return self._error(status, "GatedRepo", f"Access to model {repo_id} is restricted.", head)
        name = unquote(m.group(3))
        f = repo.files.get(name)
        if f is None:
            return self._error(404, "EntryNotFound", f"{name} does not exist", head, repo.commit)
        etag = '"' + hashlib.sha256(f.data + str(f.length).encode()).hexdigest() + '"'
        base = {"X-Repo-Commit": repo.commit, "ETag": etag, "Accept-Ranges": "bytes"}
        match = re.match(r"bytes=(\d+)-(\d*)$", rng.strip())
        if match and not head:
            start = int(match.group(1))
            end = int(match.group(2)) if match.group(2) else f.length - 1
            if start >= f.length:
                return self._send(416, b"", {**base, "Content-Range": f"bytes */{f.length}"}, head)
            body = f.read(start, end)
            fake.requests[-1] = (self.command, unquote(path), str(len(body)))
            return self._send(206, body, {**base, "Content-Range": f"bytes {start}-{start + len(body) - 1}/{f.length}"})
        if head:
            return self._send(200, b"", {**base, "Content-Length": str(f.length)}, head=True)
        body = f.read(0, f.length - 1)
        fake.requests[-1] = (self.command, unquote(path), str(len(body)))
        return self._send(200, body, base)

    def _tree(self, repo: FakeRepo, sub: str, query: dict, head: bool) -> None:
        recursive = (query.get("recursive") or ["false"])[0].lower() == "true"
        prefix = sub.rstrip("/") + "/" if sub else ""
        entries, folders = [], set()
        for name in sorted(repo.files):
            if not name.startswith(prefix):
                continue
            rest = name[len(prefix):]
            if "/" in rest and not recursive:
                folders.add(prefix + rest.split("/", 1)[0])
                continue
            f = repo.files[name]
            entry = {"type": "file", "oid": hashlib.sha1(f.data).hexdigest(), "size": f.length, "path": name}
            if f.length > 10_000_000 or name.endswith((".gguf", ".safetensors")):
                entry["lfs"] = {"oid": hashlib.sha256(f.data).hexdigest(), "size": f.length, "pointerSize": 134}
            entries.append(entry)
        entries += [{"type": "directory", "oid": "0" * 40, "size": 0, "path": d} for d in sorted(folders)]
        cursor = int((query.get("cursor") or ["0"])[0])
        page = entries[cursor:cursor + self.fake.page_size]
        headers = {"Content-Type": "application/json"}
        if cursor + self.fake.page_size < len(entries):
            nxt = (f"{self.fake.url}{quote(urlsplit(self.path).path)}?recursive={str(recursive).lower()}"
                   f"&expand=false&cursor={cursor + self.fake.page_size}")
            headers["Link"] = f'<{nxt}>; rel="next"'
        self._send(200, json.dumps(page).encode(), headers, head)


# ---- file builders ------------------------------------------------------------------------------

def safetensors_bytes(tensors: dict[str, tuple[str, list[int]]], pad_to: int = 0) -> tuple[bytes, int]:
    """A safetensors file's header (and the declared total size): name -> (dtype, shape)."""
    sizes = {"F64": 8, "F32": 4, "I32": 4, "BF16": 2, "F16": 2, "F8_E4M3": 1, "I8": 1, "U8": 1}
    table, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape) in tensors.items():
        n = 1
        for d in shape:
            n *= d
        table[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n * sizes[dtype]]}
        offset += n * sizes[dtype]
    header = json.dumps(table).encode()
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header, 8 + len(header) + offset


def safetensors_file(tensors: dict[str, tuple[str, list[int]]]) -> FakeFile:
    data, size = safetensors_bytes(tensors)
    return FakeFile(data, size)


def index_json(shards: dict[str, dict[str, tuple[str, list[int]]]], total: int) -> bytes:
    weight_map = {t: shard for shard, tensors in shards.items() for t in tensors}
    return json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}).encode()


@pytest.fixture
def fake_hub(tmp_path, monkeypatch):
    """A started FakeHub with HF_ENDPOINT pointing at it and private caches; stopped after the test."""
    hub = FakeHub().start()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.setenv("LLMPLAN_CACHE_DIR", str(tmp_path / "llmplan-cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setenv("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    yield hub
    hub.stop()


def gguf_bytes(tmp_path, *, hidden: int = 64, layers: int = 2, heads: int = 4, kv_heads: int = 2, ff: int = 128,
               vocab: int = 96, name: str = "tiny-llama") -> bytes:
    """A small but real llama GGUF file written by the ``gguf`` package (llama.cpp's own writer)."""
    import gguf
    import numpy as np

    path = tmp_path / f"{name}-{hidden}-{layers}.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_context_length(4096)
    w.add_embedding_length(hidden)
    w.add_block_count(layers)
    w.add_feed_forward_length(ff)
    w.add_head_count(heads)
    w.add_head_count_kv(kv_heads)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"tok{i}" for i in range(vocab)])
    head_dim = hidden // heads

    def tensor(tname, *shape):
        w.add_tensor(tname, np.ones(shape, dtype=np.float32))

    tensor("token_embd.weight", vocab, hidden)
    tensor("output_norm.weight", hidden)
    tensor("output.weight", vocab, hidden)
    for i in range(layers):
        tensor(f"blk.{i}.attn_norm.weight", hidden)
        tensor(f"blk.{i}.attn_q.weight", hidden, hidden)
        tensor(f"blk.{i}.attn_k.weight", kv_heads * head_dim, hidden)
        tensor(f"blk.{i}.attn_v.weight", kv_heads * head_dim, hidden)
        tensor(f"blk.{i}.attn_output.weight", hidden, hidden)
        tensor(f"blk.{i}.ffn_norm.weight", hidden)
        tensor(f"blk.{i}.ffn_gate.weight", ff, hidden)
        tensor(f"blk.{i}.ffn_up.weight", ff, hidden)
        tensor(f"blk.{i}.ffn_down.weight", hidden, ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


def tiny_llama_config(hidden: int = 64, layers: int = 2, heads: int = 4, kv_heads: int = 2, ff: int = 128,
                      vocab: int = 96) -> dict:
    """The config.json that describes ``gguf_bytes``'s model (same dimensions, untied head)."""
    return {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": hidden,
            "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
            "intermediate_size": ff, "vocab_size": vocab, "max_position_embeddings": 4096,
            "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
