"""Recall latency (p50/p95) in-process and over HTTP, and requests/s with 8 concurrent clients,
with 100,000 frames in the workspace mind and 10,000 in the personal mind.

The minds are built once and cached under benchmarks/results/recall-home/ (frames written with
FrameStore.create_i_frames in batches of 5,000, vectors indexed). Vectors come from the mock
provider at 1024 dims: embedding 110,000 frames with the real model on a small machine takes
hours, and a mind's vectors and its queries must share one fingerprint, so queries use the mock
too. The vector lane's cost (a brute-force vec0 scan of 1024-float rows) does not depend on
which model made the vectors; the real model's query-embedding time is measured separately and
added to give the "estimated with real model" figure.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from _common import RESULTS, ROOT, percentile, write_results

from mind_core.embeddings import create_embedding_provider
from mind_core.mind import Mind
from mind_core.retrieval import CombinedRetrieval
from mind_core.store.db import MMAP_BYTES
from mind_core.store.frames import NewFrame
from mind_core.store.home import MindHome
from mind_core.store.schema import get_meta, set_meta

HOME = RESULTS / "recall-home"
WORKSPACE = "bench"
BATCH = 5_000
FRAMES_PER_SESSION = 50
BUILT_MARK = "bench_recall_frames"
SEED = 20240305

TOPICS = (
    "budget migration postgres billing falcon roadmap hiring vendor launch security audit latency cache "
    "kubernetes invoice contract onboarding retention churn pricing backlog incident postmortem design "
    "review travel visa conference paper dataset model training evaluation garden recipe marathon"
).split()


def vocabulary(rng: random.Random, size: int = 3_000) -> list[str]:
    syllables = "ka lo mi ne ra to su vi pe da ri ko an el or us it om ba fe".split()
    words = {"".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(size * 2)}
    return sorted(words)[:size] + list(TOPICS)


def frame_text(rng: random.Random, words: list[str]) -> str:
    topic = rng.choice(TOPICS)
    body = " ".join(rng.choice(words) for _ in range(rng.randint(15, 40)))
    return f"[{topic} notes] {rng.choice(('user', 'assistant'))}: {body} {topic}."


def build_mind(path: Path, count: int, seed: int, embedder) -> float | None:
    """Write ``count`` indexed frames unless a complete mind of that size is cached (None);
    returns the build seconds."""
    if path.is_file():
        with Mind.open(path, embedder=embedder) as mind:
            if get_meta(mind.db, BUILT_MARK) == str(count):
                return None
        path.unlink()
    rng = random.Random(seed)
    words = vocabulary(rng)
    began = time.perf_counter()
    with Mind.open(path, embedder=embedder) as mind:
        for start in range(0, count, BATCH):
            specs = []
            for i in range(start, min(start + BATCH, count)):
                gop = f"bench:{i // FRAMES_PER_SESSION}"
                if i % FRAMES_PER_SESSION == 0:
                    mind.sessions.ensure(gop)
                day = 1 + i % 28
                specs.append(
                    NewFrame(
                        gop, frame_text(rng, words), created_at=f"2024-{1 + i % 12:02d}-{day:02d}T10:00:00Z"
                    )
                )
            frames = mind.frames.create_i_frames(specs)
            mind.search.index_frames_batch(frames)
            print(f"  {path.name}: {min(start + BATCH, count):,}/{count:,} frames", flush=True)
        set_meta(mind.db, BUILT_MARK, str(count))
    return time.perf_counter() - began


def queries(n: int) -> list[str]:
    rng = random.Random(SEED + 1)
    words = vocabulary(random.Random(SEED))
    return [f"{rng.choice(TOPICS)} {rng.choice(words)} {rng.choice(TOPICS)}" for _ in range(n)]


def stats_ms(samples: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in samples]
    return {"p50_ms": round(percentile(ms, 50), 2), "p95_ms": round(percentile(ms, 95), 2), "n": len(ms)}


def in_process(home: MindHome, embedder, texts: list[str], mmap_bytes: int = 0) -> dict[str, float]:
    """CombinedRetrieval on read-only minds; ``mmap_bytes`` as the HTTP server's handles use."""
    with (
        Mind.open(home.workspace_path(WORKSPACE), embedder=embedder, readonly=True) as ws,
        Mind.open(home.personal_path, embedder=embedder, readonly=True) as personal,
    ):
        for mind in (ws, personal):
            mind.db.execute(f"PRAGMA mmap_size = {mmap_bytes}")
        engine = CombinedRetrieval(ws, personal)
        for text in texts[:10]:
            engine.search(text)
        samples = []
        for text in texts:
            began = time.perf_counter()
            found = engine.search(text)
            samples.append(time.perf_counter() - began)
            assert found.merged()  # the answer: at most 10 results across both minds
    return stats_ms(samples)


def real_model_query_ms(runs: int = 50) -> dict[str, float]:
    """The real MiniLM's cost for one short query (what the mock's near-zero cost stands in for)."""
    from mind_core.embeddings import InprocessEmbedder

    real = InprocessEmbedder(dimensions=1024)
    mock = create_embedding_provider("mock")
    real.embed("warm up the model")
    texts = queries(runs)
    real_samples, mock_samples = [], []
    for text in texts:
        began = time.perf_counter()
        real.embed(text)
        real_samples.append(time.perf_counter() - began)
        began = time.perf_counter()
        mock.embed(text)
        mock_samples.append(time.perf_counter() - began)
    return {
        "real_p50_ms": round(statistics.median(real_samples) * 1000, 2),
        "mock_p50_ms": round(statistics.median(mock_samples) * 1000, 3),
    }


def start_server(home: MindHome) -> tuple[subprocess.Popen, int]:
    command = [
        sys.executable,
        "-m",
        "mind_core.cli",
        "serve",
        "--home",
        str(home.root),
        "--workspace",
        WORKSPACE,
    ]
    process = subprocess.Popen(
        [*command, "--embedder", "mock", "--port", "0", "--quiet"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    while True:
        line = process.stderr.readline()
        if not line:
            raise RuntimeError("the server exited before listening")
        if "listening on" in line:
            return process, int(line.split("listening on http://")[1].split()[0].rsplit(":", 1)[1])


def http_recall(conn: http.client.HTTPConnection, text: str) -> dict:
    conn.request(
        "POST", "/recall", body=json.dumps({"query": text}), headers={"Content-Type": "application/json"}
    )
    response = conn.getresponse()
    body = response.read()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")
    return json.loads(body)


def over_http(port: int, texts: list[str]) -> dict[str, float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for text in texts[:10]:
        http_recall(conn, text)
    samples = []
    for text in texts:
        began = time.perf_counter()
        http_recall(conn, text)
        samples.append(time.perf_counter() - began)
    conn.close()
    return stats_ms(samples)


def concurrent_rps(port: int, texts: list[str], clients: int, seconds: float) -> dict[str, float]:
    done = [0] * clients
    latencies: list[list[float]] = [[] for _ in range(clients)]
    stop = threading.Event()

    def client(index: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        i = index
        while not stop.is_set():
            began = time.perf_counter()
            http_recall(conn, texts[i % len(texts)])
            latencies[index].append(time.perf_counter() - began)
            done[index] += 1
            i += clients
        conn.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    return {
        "clients": clients,
        "requests": sum(done),
        "seconds": round(elapsed, 1),
        "requests_per_s": round(sum(done) / elapsed, 1),
        **stats_ms([s for per in latencies for s in per]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workspace-frames", type=int, default=100_000)
    parser.add_argument("--personal-frames", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()

    home = MindHome(HOME)
    mock = create_embedding_provider("mock")
    print(f"building minds under {HOME.relative_to(ROOT)} (cached between runs) ...")
    built = {
        "workspace_s": build_mind(home.workspace_path(WORKSPACE), args.workspace_frames, SEED, mock),
        "personal_s": build_mind(home.personal_path, args.personal_frames, SEED + 2, mock),
    }
    build = {k: "cached" if v is None else round(v, 1) for k, v in built.items()}
    texts = queries(args.queries)
    local = in_process(home, mock, texts)
    local_mmap = in_process(home, mock, texts, MMAP_BYTES)
    embed = real_model_query_ms()
    process, port = start_server(home)
    try:
        remote = over_http(port, texts)
        load = concurrent_rps(port, texts, args.clients, args.seconds)
    finally:
        process.terminate()
        process.wait(timeout=30)
    added = embed["real_p50_ms"] - embed["mock_p50_ms"]
    estimate = {
        "in_process_p50_ms": round(local["p50_ms"] + added, 2),
        "in_process_mmap_p50_ms": round(local_mmap["p50_ms"] + added, 2),
        "http_p50_ms": round(remote["p50_ms"] + added, 2),
    }
    print(
        f"minds: workspace {args.workspace_frames:,} frames, personal {args.personal_frames:,} frames "
        f"(vectors: mock provider, 1024 dims); build {build}"
    )
    print(
        f"recall in-process   p50 {local['p50_ms']:.1f} ms  p95 {local['p95_ms']:.1f} ms  ({local['n']} queries)"
    )
    print(
        f"  with mmap (as the HTTP server's handles) p50 {local_mmap['p50_ms']:.1f} ms  "
        f"p95 {local_mmap['p95_ms']:.1f} ms"
    )
    print(
        f"recall over HTTP    p50 {remote['p50_ms']:.1f} ms  p95 {remote['p95_ms']:.1f} ms  (1 client, keep-alive)"
    )
    print(
        f"recall over HTTP    {load['requests_per_s']:.1f} requests/s with {load['clients']} concurrent clients "
        f"(p50 {load['p50_ms']:.0f} ms, p95 {load['p95_ms']:.0f} ms over {load['seconds']} s)"
    )
    print(
        f"query embedding     real all-MiniLM-L6-v2 p50 {embed['real_p50_ms']:.1f} ms "
        f"(mock {embed['mock_p50_ms']:.3f} ms)"
    )
    print(
        f"estimated with real model: in-process p50 {estimate['in_process_p50_ms']:.1f} ms "
        f"({estimate['in_process_mmap_p50_ms']:.1f} ms with mmap), "
        f"over HTTP p50 {estimate['http_p50_ms']:.1f} ms"
    )
    write_results(
        "recall",
        {
            "workspace_frames": args.workspace_frames,
            "personal_frames": args.personal_frames,
            "vectors": "mock provider, 1024 dims",
            "build_seconds": build,
            "in_process": local,
            "in_process_mmap": local_mmap,
            "http_sequential": remote,
            "http_concurrent": load,
            "query_embedding": embed,
            "estimated_with_real_model": estimate,
        },
    )


if __name__ == "__main__":
    main()
