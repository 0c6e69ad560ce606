"""Embedders: the bundled local model, and the real httpx / google-genai clients against
local fake servers that speak the OpenAI and Gemini embedding wire formats."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from distill.config import load_settings
from distill.errors import PermanentError, TransientError
from distill.store.embedders import GeminiEmbedder, LocalEmbedder, OpenAIEmbedder


class FakeEmbeddings:
    """``POST`` handler thread; ``script`` is a list of (status, headers, body|None) answers,
    ``None`` body = answer the request properly (vectors of ``dim`` derived from the text)."""

    def __init__(self, dim: int = 8):
        self.dim = dim
        self.requests: list[tuple[str, dict, dict]] = []
        self.script: list[tuple[int, dict, object]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                fake.requests.append((self.path, dict(self.headers), body))
                status, headers, payload = fake.script.pop(0) if fake.script else (200, {}, None)
                if payload is None:
                    payload = fake.answer(self.path, body)
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def vec(self, text: str) -> list[float]:
        rng = np.random.default_rng(abs(hash(text)) % 2**32)
        return (rng.standard_normal(self.dim) * 3).tolist()  # deliberately not unit length

    def answer(self, path: str, body: dict) -> dict:
        if path.endswith(":batchEmbedContents"):
            return {"embeddings": [{"values": self.vec(r["content"]["parts"][0]["text"])} for r in body["requests"]]}
        texts = body["input"]
        return {"object": "list", "model": body["model"],
                "data": [{"object": "embedding", "index": i, "embedding": self.vec(t)}
                         for i, t in reversed(list(enumerate(texts)))]}  # out of order on purpose

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def openai_settings(url: str, **kw):
    base = dict(embedder="openai", embed_base_url=url, embed_model="jina-embeddings-v3",
                embed_api_key="sk-test", retry_attempts=3, retry_max_wait=0.2, retry_max_total=5)
    base.update(kw)
    return load_settings(**base)


def test_openai_batches_sends_task_and_dimensions_and_normalises():
    with FakeEmbeddings(dim=8) as fake:
        emb = OpenAIEmbedder(openai_settings(fake.url, embed_batch_size=2, embed_dimensions=8,
                                             embed_task="retrieval.passage"))
        texts = ["一", "two", "three", "four", "five"]
        vecs = emb.passages(texts)
        assert vecs.shape == (5, 8)
        assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
        expected = np.asarray(fake.vec("three"))
        assert np.allclose(vecs[2], expected / np.linalg.norm(expected), atol=1e-5)  # order restored
        assert [r[2]["input"] for r in fake.requests] == [["一", "two"], ["three", "four"], ["five"]]
        path, headers, body = fake.requests[0]
        assert path == "/v1/embeddings" and headers["Authorization"] == "Bearer sk-test"
        assert body["dimensions"] == 8 and body["task"] == "retrieval.passage"
        emb.query("what")
        assert fake.requests[-1][2]["task"] == "retrieval.query"


def test_openai_retries_429_with_retry_after_then_succeeds():
    with FakeEmbeddings() as fake:
        fake.script = [(429, {"Retry-After": "0"}, {"error": {"message": "rate limited"}}),
                       (503, {}, {"error": {"message": "overloaded"}})]
        vecs = OpenAIEmbedder(openai_settings(fake.url + "/v1")).passages(["a", "b"])
        assert vecs.shape == (2, 8) and len(fake.requests) == 3


def test_openai_gives_up_after_attempts_with_server_message():
    with FakeEmbeddings() as fake:
        fake.script = [(500, {"Retry-After": "0"}, {"error": {"message": "boom"}})] * 3
        with pytest.raises(TransientError, match="500"):
            OpenAIEmbedder(openai_settings(fake.url)).passages(["a"])
        assert len(fake.requests) == 3


def test_openai_401_fails_fast_naming_the_setting():
    with FakeEmbeddings() as fake:
        fake.script = [(401, {}, {"error": {"message": "Invalid API key provided"}})]
        with pytest.raises(PermanentError) as err:
            OpenAIEmbedder(openai_settings(fake.url)).passages(["a"])
        assert "Invalid API key provided" in str(err.value) and "DISTILL_EMBED_API_KEY" in str(err.value)
        assert len(fake.requests) == 1


@pytest.mark.parametrize("bad", [[0.0] * 8, [1.0] * 7, []])
def test_zero_or_wrong_length_vectors_are_refused(bad):
    with FakeEmbeddings() as fake:
        fake.script = [(200, {}, {"data": [{"index": 0, "embedding": [1.0] * 8},
                                           {"index": 1, "embedding": bad}]})]
        emb = OpenAIEmbedder(openai_settings(fake.url, embed_dimensions=8))
        with pytest.raises(PermanentError):
            emb.passages(["ok", "bad"])


def gemini_settings(url: str, **kw):
    base = dict(embedder="gemini", embed_base_url=url, embed_api_key="g-key", embed_model="gemini-embedding-001",
                retry_attempts=3, retry_max_wait=0.2, retry_max_total=5)
    base.update(kw)
    return load_settings(**base)


def test_gemini_uses_batch_embed_with_task_types_and_dimensions():
    with FakeEmbeddings(dim=6) as fake:
        emb = GeminiEmbedder(gemini_settings(fake.url, embed_dimensions=6))
        vecs = emb.passages(["部署", "deploy"])
        assert vecs.shape == (2, 6) and np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
        path, headers, body = fake.requests[0]
        assert path.endswith("models/gemini-embedding-001:batchEmbedContents")
        assert headers.get("x-goog-api-key") == "g-key"
        req = body["requests"][0]
        assert req["taskType"] == "RETRIEVAL_DOCUMENT" and req["outputDimensionality"] == 6
        emb.query("where")
        assert fake.requests[-1][2]["requests"][0]["taskType"] == "RETRIEVAL_QUERY"


def test_gemini_503_is_retried_and_400_is_permanent_with_message():
    with FakeEmbeddings(dim=6) as fake:
        fake.script = [(503, {}, {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}})]
        assert GeminiEmbedder(gemini_settings(fake.url)).passages(["a"]).shape == (1, 6)
        assert len(fake.requests) == 2
        fake.script = [(400, {}, {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                            "status": "INVALID_ARGUMENT"}})]
        with pytest.raises(PermanentError, match="API key not valid"):
            GeminiEmbedder(gemini_settings(fake.url)).passages(["a"])


def test_gemini_unreachable_server_is_a_retried_transient_error_naming_the_setting():
    """google-genai sends through its own httpx2 stack: a refused connection must still be one
    of our errors (retried, then reported with the setting to check), not a raw traceback."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    emb = GeminiEmbedder(gemini_settings(f"http://127.0.0.1:{port}", retry_attempts=2, retry_max_wait=0.05))
    with pytest.raises(TransientError, match="DISTILL_EMBED_BASE_URL"):
        emb.passages(["a"])


def test_local_embedder_query_and_passage_sides_and_cross_language():
    emb = LocalEmbedder()
    assert emb.dim == 384
    p = emb.passages(["部署服务之前必须先运行数据库迁移脚本。", "The user prefers a dark editor theme."])
    assert p.shape == (2, 384) and np.allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-4)
    q = emb.query("run database migrations before deploying")
    assert not np.allclose(q, emb.passages(["run database migrations before deploying"])[0])
    assert float(p[0] @ q) > float(p[1] @ q)
