"""bench_ingest.py's report: the table of its runs, where the time went, and its targets."""

from __future__ import annotations

import os

from _ingest_workers import EDITED_SHARE
from _setup import target


def report(f: dict) -> None:
    bare = f["bare"]
    print(f"\nMachine: {os.cpu_count()} CPUs. Real folder: {f['one']['files']} files, {f['one']['chunks']} chunks "
          f"({f['v2']['v1_chunks']} cut offline for {f['v2']['units']} generated units), {bare['mean_tokens']:.0f} "
          f"tokens per chunk on average, {bare['truncated']} over the model's window.\n")
    header = (f"{'run':<40}{'files':>6}{'chunks':>7}{'seconds':>9}{'files/s':>8}{'chunks/s':>9}  "
              f"{'peak RSS MB':<26}{'load':>9}")
    print(header)
    print("-" * len(header))

    def row(label, files, chunks, seconds, rss="", load=None, rate=True):
        rates = f"{files / seconds:>8.1f}{chunks / seconds:>9.1f}" if rate and seconds else f"{'':>17}"
        loads = f"{load[0]:>4.1f}>{load[1]:<4.1f}" if load else ""
        print(f"{label:<40}{files:>6}{chunks:>7}{seconds:>9.2f}{rates}  {rss:<26}{loads}")

    if "bulk" in f:
        b = f["bulk"]
        row("tiny encoder, in-process (as --sync)", b["files"], b["chunks"], b["seconds"],
            f"{b['peak_rss']:.0f} (this process)", b["load"])
    for key, label in [("one", f"MiniLM, 1 worker x {f['threads'][0]} threads"),
                       ("two", f"MiniLM, 2 workers x {f['threads'][1]} thread(s)")]:
        r = f[key]
        pools = " + ".join(f"{p.get('pool', 0):.0f}" for p in r["peak_rss"])
        mains = " + ".join(f"{p.get('main', 0):.0f}" for p in r["peak_rss"])
        row(label, r["files"], r["chunks"], r["seconds"], f"{pools} (pool), {mains} (main)", r["load"])
    u, v, s = f["unchanged"], f["v2"], f["sync"]
    row("unchanged folder again (wall clock)", u["files"], u["chunks"], u["wall_seconds"], "", u["load"])
    row("second version, 2 workers (encoded)", v["files"], v["encoded"], v["seconds"], "", v["load"])
    row("ingest --sync child, small folder", s["files"], s["chunks"], s["wall_seconds"],
        f"{s['peak_rss']:.0f} (child, with model)", None, rate=False)
    print(f"{'bare encoder, all texts in one call':<40}{'':>6}{bare['texts']:>7}{bare['seconds']:>9.2f}{'':>8}"
          f"{bare['rate']:>9.1f}  {bare['threads']} threads{'':<17}{bare['load'][0]:>4.1f}>{bare['load'][1]:<4.1f}")
    print(f"{'  sample: one call per document':<40}{bare['sample_documents']:>6}{bare['sample_texts']:>7}{'':>9}{'':>8}"
          f"{bare['per_document_rate']:>9.1f}  (best of 2, alternating)")
    print(f"{'  sample: one call for the sample':<40}{bare['sample_documents']:>6}{bare['sample_texts']:>7}{'':>9}{'':>8}"
          f"{bare['sample_one_call_rate']:>9.1f}")
    print("seconds: job creation to the last item's finished_at (the --sync child: its whole life, with start-up "
          "and model load). load: 1-minute load average before>after.")
    print(f"Worker warm-up: the first job of 4 small files took {f['warm_one']:.1f}s on a fresh worker, "
          f"{f['warm_two']:.1f}s on two.")

    print("\nWhere the workers' time went (timers inside the worker processes; share of workers x seconds):")
    for key, label in [("one", "1 worker"), ("two", "2 workers")]:
        r = f[key]
        w = r["worker_seconds"]
        capacity = r["seconds"] * r["workers"]
        encode, index, merge = w.get("encode", 0.0), w.get("index", 0.0), w.get("merge", 0.0)
        print(f"  {label}: encoding {encode / capacity:.0%}, rest of indexing {(index - encode) / capacity:.0%}, "
              f"merging {merge / capacity:.0%} (of which version lineage {w.get('lineage', 0.0) / capacity:.1%}), "
              f"between tasks {1 - (index + merge) / capacity:.0%}; encoder inside the pipeline "
              f"{w.get('texts', 0) / encode if encode else 0:.1f} chunks/s per process. Until the merges ran too: "
              f"{r['drained_seconds']:.1f}s.")

    if "bulk" in f:
        b = f["bulk"]
        print(f"\nTiny-encoder run, where the time went ({b['chunks']} chunks, {b['distinct']} distinct, "
              f"{b['texts_encoded']} encoded, {b['statuses']}):")
        for step, seconds in sorted(b["steps"].items(), key=lambda item: -item[1]):
            print(f"  {step:<40}{seconds:>8.2f}s {seconds / b['seconds']:>6.1%} {seconds / b['chunks'] * 1000:>7.2f} "
                  f"ms/chunk")

    print("\nTargets:")
    rate = bare["rate"]
    one, two = f["one"]["chunks"] / f["one"]["seconds"], f["two"]["chunks"] / f["two"]["seconds"]
    target("", "real folder: >= 200 files, >= 2,000 distinct chunks",
           f"{f['one']['files']} files, {f['one']['chunks']} chunks, {f['one']['distinct']} distinct",
           f["one"]["files"] >= 200 and f["one"]["distinct"] >= 2000)
    target("", "1 worker end-to-end / bare encoder >= 0.8", f"{one:.1f} / {rate:.1f} = {one / rate:.2f}",
           one / rate >= 0.8)
    target("", "2 workers end-to-end / bare encoder >= 0.9", f"{two:.1f} / {rate:.1f} = {two / rate:.2f}",
           two / rate >= 0.9)
    target("", "2 workers no slower than 1", f"{two:.1f} vs {one:.1f} chunks/s ({two / one:.2f}x)", two >= one)
    if "bulk" in f:
        b = f["bulk"]
        rest = b["chunks"] / (b["seconds"] - b["encode_seconds"])
        target("", "tiny encoder: >= 2,000 files, >= 20,000 chunks", f"{b['files']} files, {b['chunks']} chunks "
               f"({b['distinct']} distinct)", b["files"] >= 2000 and b["chunks"] >= 20000)
        target("", "everything but encoding >= 20x the real encoder",
               f"{rest:.1f} chunks/s = {rest / rate:.1f}x {rate:.1f}", rest / rate >= 20)
    target("", "second version: encoder texts <= the 30% of chunks that changed",
           f"{v['encoded']} encoded of {v['v2_chunks']} chunks ({v['encoded'] / v['v2_chunks']:.1%}); {v['changed']} "
           f"chunk texts changed ({v['changed'] / v['v2_chunks']:.1%}) in {v['files_rewritten']} rewritten files; "
           f"{v['statuses']}", v["encoded"] <= v["changed"] <= EDITED_SHARE * v["v2_chunks"] + 1)
    for key, label in [("one", "1 worker"), ("two", "2 workers")]:
        r = f[key]
        lineage, capacity = r["worker_seconds"].get("lineage", 0.0), r["drained_seconds"] * r["workers"]
        target("", f"version families and supersession <= 10% of indexing time ({label}, until the merges ran)",
               f"{lineage:.2f}s of {r['drained_seconds']:.1f}s x {r['workers']} = {lineage / capacity:.1%}; "
               f"{lineage / r['worker_seconds'].get('merge', 1.0):.0%} of the merges' time", lineage / capacity <= 0.10)
    speedup = f["one"]["seconds"] / u["wall_seconds"]
    target("", "unchanged folder again >= 50x faster than the first ingest (1 worker)",
           f"{f['one']['seconds']:.1f}s / {u['wall_seconds']:.2f}s = {speedup:.0f}x", speedup >= 50)


def pile_report(pile: dict, bare: dict) -> None:
    """Run 8: is indexing a real pile bound by the encoder (issue 40)?"""
    wall, distinct = pile["seconds"], pile["distinct"]
    end_to_end = distinct / wall
    w = pile["worker_seconds"]
    capacity = wall * pile["workers"]
    outside = 1 - w.get("encode", 0.0) / capacity
    print(f"\nReal pile: {pile['files']} files, {pile['chunks']} chunks ({distinct} distinct texts, {pile['encoded']} "
          f"encoded), {wall:.1f}s with 2 workers ({pile['statuses']}); load {pile['load'][0]:.1f}>{pile['load'][1]:.1f}")
    print(f"  workers' time: encoding {w.get('encode', 0.0) / capacity:.0%}, rest of indexing "
          f"{(w.get('index', 0.0) - w.get('encode', 0.0)) / capacity:.0%}, merging {w.get('merge', 0.0) / capacity:.0%}, "
          f"between tasks {1 - (w.get('index', 0.0) + w.get('merge', 0.0)) / capacity:.0%}")
    print(f"  bare encoder on the {bare['texts']} distinct texts: {bare['seconds']:.1f}s, {bare['rate']:.1f} chunks/s "
          f"({bare['threads']} threads, load {bare['load'][0]:.1f}>{bare['load'][1]:.1f})")
    merged = distinct / pile["drained_seconds"]
    print(f"  until every file was merged too: {pile['drained_seconds']:.1f}s, {merged:.1f} distinct chunks/s")
    target("40", f"real pile ({pile['files']:,} files), 2 workers: distinct chunks/s to indexed >= 0.8x the bare encoder",
           f"{end_to_end:.1f} / {bare['rate']:.1f} = {end_to_end / bare['rate']:.2f}",
           pile["files"] >= 3000 and end_to_end / bare["rate"] >= 0.8)
    target("40", "real pile: the same until every file was merged too >= 0.8x the bare encoder",
           f"{merged:.1f} / {bare['rate']:.1f} = {merged / bare['rate']:.2f}",
           pile["files"] >= 3000 and merged / bare["rate"] >= 0.8)
    target("40", "real pile: workers' time outside the encoder <= 25% of the wall (to indexed)", f"{outside:.0%}",
           outside <= 0.25)
