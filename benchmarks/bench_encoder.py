"""Encoder speed and memory: all-MiniLM-L6-v2 in fp32 and int8 on CPU, through torch and onnxruntime.

    python benchmarks/bench_encoder.py [--passages 300] [--batch-size 32]

Builds deterministic API-gateway passages of 200-250 words, then runs each
variant in a fresh child process (so load time includes the imports and peak
RSS is that variant's own) and prints one table. fp32 runs twice: with the
encoder's length sorting and without it (each batch of 32 in corpus order).
Retrieval quality of int8 is measured elsewhere, on the demo ground truth.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _setup import QUICK, SMOKE, machine_load, target  # noqa: E402

SEED = 20250315

# Placeholders take a number from NUMBERS, so passages differ in more than word order.
SENTENCES = [
    "The gateway terminates TLS on port {port} and forwards plain HTTP to the upstream pool.",
    "Each client key is limited to {n} requests per minute; bursts of up to {m} requests are absorbed by the token bucket.",
    "When the limit is exceeded the gateway answers 429 Too Many Requests with a Retry-After header of {s} seconds.",
    "API keys are rotated from the console under Settings > Credentials, and the previous key stays valid for {h} hours.",
    "To regenerate a client secret, call POST /v{v}/credentials/rotate with the current key in the Authorization header.",
    "Upstream connections time out after {s} seconds by default, which can be raised per route up to {m} seconds.",
    "The health check probes /healthz on every upstream every {s} seconds and removes a node after {n} failures in a row.",
    "A removed node is put back into rotation after {h} consecutive successful probes.",
    "Request bodies larger than {n} kilobytes are rejected with 413 before they reach any upstream service.",
    "Routes are matched by longest path prefix first, then by HTTP method, then by the Host header.",
    "The admin API listens on a separate port, {port}, and should never be exposed to the public internet.",
    "Configuration changes are applied without a restart; the gateway reloads its routing table within {s} seconds.",
    "Version {v}.{m} introduced mutual TLS between the gateway and upstreams, enabled per cluster with a single flag.",
    "Access logs are written in JSON Lines and include the route id, the upstream latency in milliseconds and the client key id.",
    "Latency percentiles are exported to Prometheus under the gateway_request_duration_seconds histogram.",
    "With {n} worker processes the gateway sustained {m} requests per second on a four-core machine in our load test.",
    "JWT validation caches the identity provider's signing keys for {h} minutes to avoid a network call per request.",
    "If the identity provider is unreachable, cached keys keep working until they expire, after which requests fail with 503.",
    "Circuit breakers open after {n} percent of requests fail within a {s}-second window and close again after a cool-down.",
    "Retries are attempted only for idempotent methods, at most {h} times, with exponential backoff starting at {m} milliseconds.",
    "CORS preflight requests are answered by the gateway itself and never forwarded upstream.",
    "The deprecated /v1 endpoints will be removed on {date}; clients should migrate to /v{v} before then.",
    "Webhook deliveries are signed with HMAC-SHA256, and the signature is sent in the X-Signature header.",
    "Consumers must reject a webhook whose timestamp is more than {s} seconds older than their own clock.",
    "The gateway adds an X-Request-Id header to every request so that logs across services can be correlated.",
    "Blue-green deployments switch traffic by changing the route's weight from 0 to {n} percent in steps.",
    "Canary releases send {h} percent of traffic to the new version and roll back automatically when the error rate doubles.",
    "Response caching honours Cache-Control from the upstream and keeps at most {n} megabytes per route in memory.",
    "Compression is applied to responses over {n} bytes when the client sends Accept-Encoding: gzip or br.",
    "IP allow lists are evaluated before authentication, so a blocked address never reaches the key lookup.",
    "Quota usage is reported hourly, and a warning email is sent when a key passes {n} percent of its monthly quota.",
    "On Kubernetes the gateway runs as a Deployment with {h} replicas behind a Service of type LoadBalancer.",
    "Readiness probes fail while the routing table is loading, so new pods receive no traffic until they are ready.",
    "The gateway drains in-flight requests for up to {s} seconds on SIGTERM before it exits.",
    "Secrets such as upstream client certificates are read from files mounted at start-up, never from environment variables.",
    "An error budget of {n} minutes per month is shared by all public routes in the production cluster.",
    "The gRPC bridge translates JSON requests to protobuf messages for services that only speak gRPC.",
    "Support for HTTP/3 is experimental in release {v}.{m} and is disabled unless QUIC is turned on explicitly.",
    "Troubleshooting tip: a 502 usually means the upstream closed the connection before sending response headers.",
    "If clients see intermittent 504 errors, compare the upstream timeout with the slowest percentile in the latency histogram.",
    "Audit events for key creation, rotation and revocation are retained for {n} days and can be exported as CSV.",
    "Revoked keys are rejected within {s} seconds on every gateway node because revocations are pushed over the cluster bus.",
]


def _fill(sentence: str, rng: random.Random) -> str:
    return sentence.format(
        port=rng.choice([443, 8443, 9443, 8001, 8444]),
        n=rng.choice([5, 10, 20, 50, 100, 250, 1000, 1200]),
        m=rng.choice([2, 3, 30, 60, 120, 500, 4000]),
        s=rng.choice([1, 2, 5, 10, 15, 30, 60]),
        h=rng.choice([2, 3, 4, 6, 12, 24, 48]),
        v=rng.choice([2, 3, 4]),
        date=f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
    )


def build_passages(count: int, *, min_words: int = 200, max_words: int = 250, seed: int = SEED) -> list[str]:
    """Deterministic passages of min_words..max_words words: whole sentences, none twice in a passage."""
    rng = random.Random(seed)
    passages = []
    for _ in range(count):
        target = rng.randint(min_words, max_words)
        sentences: list[str] = []
        words = 0
        for template in rng.sample(SENTENCES, len(SENTENCES)):
            sentence = _fill(template, rng)
            if words + len(sentence.split()) > max_words:
                continue
            sentences.append(sentence)
            words += len(sentence.split())
            if words >= target:
                break
        passages.append(" ".join(sentences))
    return passages


# --- one variant, in a child process ------------------------------------------------------------------

# name -> (encoder options, corpus); "int8-naive" is every nn.Linear per tensor, for comparison only.
VARIANTS = {
    "fp32": ({}, "passages"),
    "fp32-unsorted": ({"sort_by_length": False}, "passages"),
    "int8": ({"quantize_int8": True}, "passages"),
    "int8-naive": ({}, "passages"),
    "onnx": ({"onnx": True}, "passages"),
    "onnx-int8": ({"onnx": True, "quantized": True}, "passages"),
    "fp32 mixed": ({}, "mixed"),
    "fp32-unsorted mixed": ({"sort_by_length": False}, "mixed"),
}


def build_corpus(kind: str, count: int) -> list[str]:
    if kind == "mixed":  # what a chunker really emits: section tails and short sections too
        return build_passages(count, min_words=20, max_words=250, seed=SEED + 1)
    return build_passages(count)


def _quantize_every_linear_per_tensor(model) -> None:
    import warnings

    import torch
    from torch.ao.quantization import quantize_dynamic

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)


def run_variant(variant: str, count: int, batch_size: int, rounds: int, vectors_path: str) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from rag.encoders import SentenceTransformerEncoder

    options, corpus = VARIANTS[variant]
    texts = build_corpus(corpus, count)

    started = time.perf_counter()
    if SMOKE:  # the hashing encoder stands in for every variant: the run goes through, no model is loaded
        from rag.encoders import HashingEncoder

        encoder = HashingEncoder()
    elif options.get("onnx"):
        # The export is cached under DATA_DIR/models (var/bench): built once, then only loaded.
        os.environ.setdefault("DATA_DIR", str(Path(__file__).resolve().parent.parent / "var" / "bench"))
        from rag.encoders import OnnxEncoder

        encoder = OnnxEncoder(batch_size=batch_size, quantized=options.get("quantized", False))
    else:
        encoder = SentenceTransformerEncoder(batch_size=batch_size, **options)
    if variant == "int8-naive":
        _quantize_every_linear_per_tensor(encoder.model)
    cold_load = time.perf_counter() - started

    if hasattr(encoder, "model"):
        max_tokens = encoder.model.max_seq_length
        token_counts = [len(ids) for ids in encoder.model.tokenizer(texts, add_special_tokens=True,
                                                                    verbose=False)["input_ids"]]
    else:  # the same tokenizer file, without loading torch's model (it would count in this variant's RSS)
        from tokenizers import Tokenizer

        from rag.encoders import minilm_max_tokens, minilm_path

        tokenizer = Tokenizer.from_file(str(minilm_path() / "tokenizer.json"))
        tokenizer.no_truncation()
        tokenizer.no_padding()
        max_tokens = minilm_max_tokens()
        token_counts = [len(encoding.ids) for encoding in tokenizer.encode_batch(texts)]
    model_tokens = sum(min(n, max_tokens) for n in token_counts)

    encoder.encode(texts[:batch_size])  # first call pays for lazy initialisation
    timings, cpu_timings = [], []
    for _ in range(rounds):
        started, cpu_started = time.perf_counter(), time.process_time()
        vectors = encoder.encode(texts)
        timings.append(time.perf_counter() - started)
        cpu_timings.append(time.process_time() - cpu_started)
    # The machine may be shared: the fastest round is the least disturbed one, and CPU
    # seconds (all threads) move less than wall seconds when other processes compete.
    best = min(timings)
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    import numpy

    numpy.save(vectors_path, numpy.asarray(vectors, dtype=numpy.float32))
    return {
        "variant": variant,
        "corpus": corpus,
        "texts": len(texts),
        "words": sum(len(text.split()) for text in texts),
        "tokens": sum(token_counts),
        "model_tokens": model_tokens,
        "truncated": sum(n > max_tokens for n in token_counts),
        "max_tokens": max_tokens,
        "threads": os.cpu_count() if SMOKE else __import__("torch").get_num_threads(),
        "query_ms": _query_ms(encoder),
        "cold_load_s": cold_load,
        "encode_s": best,
        "cpu_s": min(cpu_timings),
        "chunks_per_s": len(texts) / best,
        "tokens_per_s": model_tokens / best,
        "peak_rss_mb": peak_rss_mb,
    }


def _query_ms(encoder) -> float:
    """Median time to embed one short question, as search does for each query."""
    questions = [f"How do I rotate the API key of client {n}?" for n in range(21)]
    encoder.encode(questions[:1])
    timings = []
    for question in questions:
        started = time.perf_counter()
        encoder.encode([question])
        timings.append(time.perf_counter() - started)
    return sorted(timings)[len(timings) // 2] * 1000


# --- the parent: run each variant fresh, print one table ----------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passages", type=int, default=4 if SMOKE else 100 if QUICK else 300)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=1 if SMOKE else 2, help="timed passes per variant; the fastest counts")
    parser.add_argument("--variants", default="fp32,onnx" if SMOKE else ",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--vectors", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        print(json.dumps(run_variant(args.child, args.passages, args.batch_size, args.rounds, args.vectors)))
        return 0

    import tempfile

    import numpy

    load_before = os.getloadavg()[0]
    results, vectors = [], {}
    with tempfile.TemporaryDirectory() as scratch:
        for variant in args.variants.split(","):
            path = str(Path(scratch) / f"{len(results)}.npy")
            child = subprocess.run(
                [sys.executable, __file__, "--child", variant, "--vectors", path, "--passages", str(args.passages),
                 "--batch-size", str(args.batch_size), "--rounds", str(args.rounds)],
                capture_output=True, text=True,
            )
            if child.returncode != 0:
                print(child.stderr, file=sys.stderr)
                return child.returncode
            results.append(json.loads(child.stdout.strip().splitlines()[-1]))
            vectors[variant] = numpy.load(path)

    first = results[0]
    for corpus in dict.fromkeys(result["corpus"] for result in results):
        sample = next(result for result in results if result["corpus"] == corpus)
        print(
            f"corpus {corpus}: {sample['texts']} texts, {sample['words'] / sample['texts']:.0f} words and "
            f"{sample['tokens'] / sample['texts']:.0f} tokens each on average; {sample['truncated']} longer than "
            f"the model's {sample['max_tokens']}-token window (cut there)"
        )
    print(f"batch size {args.batch_size}, torch threads {first['threads']}, best of {args.rounds} rounds; "
          "tokens/s counts the tokens the model sees (after the cut, no padding)")
    print(f"machine load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after, on {os.cpu_count()} CPUs\n")

    header = (f"{'variant':<22}{'load s':>8}{'encode s':>10}{'cpu s':>8}{'chunks/s':>10}{'query ms':>10}{'tokens/s':>10}"
              f"{'peak RSS MB':>13}{'cos to fp32':>13}")
    print(header)
    print("-" * len(header))
    for result in results:
        variant = result["variant"]
        drift = ""
        if variant != "fp32" and "fp32" in vectors and result["corpus"] == "passages":
            cosines = (vectors[variant] * vectors["fp32"]).sum(axis=1)
            drift = f"{cosines.mean():.3f}/{cosines.min():.3f}"
        print(
            f"{variant:<22}{result['cold_load_s']:>8.1f}{result['encode_s']:>10.2f}{result['cpu_s']:>8.1f}"
            f"{result['chunks_per_s']:>10.1f}{result['query_ms']:>10.1f}"
            f"{result['tokens_per_s']:>10.0f}{result['peak_rss_mb']:>13.0f}{drift:>13}"
        )
    print("\nload s: a fresh process, imports included. encode s: wall clock for all texts; cpu s: CPU time of all")
    print("threads for it. cos to fp32: mean/min over the same passages.")

    by_name = {result["variant"]: result for result in results}
    for numerator, denominator in [("int8", "fp32"), ("onnx", "fp32"), ("onnx-int8", "fp32"), ("int8-naive", "fp32"), ("fp32", "fp32-unsorted"),
                                   ("fp32 mixed", "fp32-unsorted mixed")]:
        if numerator in by_name and denominator in by_name:
            wall = by_name[denominator]["encode_s"] / by_name[numerator]["encode_s"]
            cpu = by_name[denominator]["cpu_s"] / by_name[numerator]["cpu_s"]
            print(f"speed {numerator} / {denominator}: {wall:.2f}x wall clock, {cpu:.2f}x CPU time")
    print(machine_load())
    # Issue 24's rule for indexing: torch fp32 stays unless an ONNX variant is >= 1.5x faster (then its hit@5
    # on both eval corpora decides, <= 0.01 lost). Questions are ONNX fp32 either way (the same vectors).
    if "fp32" in by_name:
        fastest = max((name for name in ("onnx", "onnx-int8") if name in by_name),
                      key=lambda name: by_name["fp32"]["encode_s"] / by_name[name]["encode_s"], default=None)
        if fastest:
            speedup = by_name["fp32"]["encode_s"] / by_name[fastest]["encode_s"]
            verdict = "keep torch fp32 for indexing" if speedup < 1.5 else "hit@5 on the eval corpora decides"
            target("24", "indexing encoder chosen by the 1.5x rule",
                   f"{fastest} {speedup:.2f}x torch fp32: {verdict}", speedup < 1.5)
        if "onnx" in by_name:
            target("24", "ONNX query encode < torch's", f"{by_name['onnx']['query_ms']:.0f} ms vs "
                   f"{by_name['fp32']['query_ms']:.0f} ms", by_name["onnx"]["query_ms"] < by_name["fp32"]["query_ms"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
