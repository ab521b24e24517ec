#!/usr/bin/env python3
"""make_corpus.py - writes the seed corpus of fuzz_dispatch (tests/mri/corpus/).

Each file is one fuzzer input: a mode byte (bit 0: framed stream, bit 1: end
with the exit event) followed by the data (see fuzz_dispatch.c). The seeds
are whole sessions in the order a real client sends them, plus the
out-of-order and malformed cases the dispatcher must survive. Run it again
after changing the protocol: python3 tests/mri/make_corpus.py
"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")


def frame(body):
    if isinstance(body, dict):
        body = json.dumps(body, separators=(",", ":"))
    if isinstance(body, str):
        body = body.encode()
    return struct.pack(">I", len(body)) + body


def req(i, op, **kw):
    d = {"v": 1, "id": i, "op": op}
    d.update(kw)
    return d


SESSION = [
    req(1, "hello", client="seed"),
    req(2, "process"),
    req(3, "threads", offset=0, limit=16),
    req(4, "objects", kinds=["global", "heap"], live=True, limit=4),
    req(5, "objects", name="garr"),
    req(6, "bins"),
    req(7, "regions"),
    req(8, "metrics"),
    req(9, "backend"),
    req(10, "attach"),
    req(11, "subscribe", events=["threads"]),
    req(12, "start", interval_ms=50, counters=[
        {"metric": "mem_ref", "objects": [1]},
        {"metric": "reads", "ranges": [["0x10000", "0x10100"], [65536, 70000]], "threads": [0, 1]},
        {"metric": "writes"}]),
    req(13, "read", experiment=101),
    req(14, "read", experiment=101, threads=True),
    req(15, "samples_start", metric="writes", period=101, random=True, seed=3),
    req(16, "samples_read", max=8),
    req(17, "samples_stop"),
    req(18, "stop", experiment=101),
    req(19, "detach"),
    req(20, "mark", label="w-1"),
    req(21, "bye"),
]

SEEDS = {
    "session": (1, b"".join(frame(m) for m in SESSION)),
    "session_exit": (3, b"".join(frame(m) for m in SESSION[:13])),
    "out_of_order": (1, b"".join(frame(m) for m in [
        req(1, "read", experiment=1), req(2, "hello"), req(3, "hello"), req(4, "start", counters=[]),
        req(5, "detach"), req(6, "stop", experiment=3), req(7, "attach", backend="sim"),
        req(8, "attach"), req(9, "attach"), req(10, "start", counters=[{"metric": "l1d_miss"}])])),
    "malformed": (1, b"".join(frame(m) for m in [
        "", "{", "[]", "{}", '{"v":2,"id":1,"op":"hello"}', '{"v":1,"id":-1}',
        '{"v":1,"id":1,"op":"hello"} x', '{"v":1,"id":1.5,"op":"ping"}',
        req(2, "hello"), '{"v":1,"id":3,"op":"objects","kinds":["nope"]}',
        '{"v":1,"id":4,"op":"start","counters":[{"metric":"reads","ranges":[["0x2","0x1"]]}]}'])),
    "product": (1, b"".join(frame(m) for m in [
        req(1, "hello"), req(2, "attach"),
        req(3, "start", counters={"metrics": ["mem_ref", "reads"],
                                  "where": [{"objects": [1]}, {"ranges": [["0x10000", "0x10100"]],
                                                               "threads": [0]}, {}]}),
        req(4, "read", experiment=101, threads=True),
        req(5, "start", replace=101, counters={"metrics": ["writes"], "where": [{}, {"metric": "x"}]}),
        req(6, "start", replace=101, counters={"metrics": [], "where": [5]})])),
    "oversize": (1, struct.pack(">I", 0x7fffffff) + b"{}"),
    "truncated": (1, struct.pack(">I", 100) + b'{"v":1,"id":1,'),
    "raw_hello": (0, json.dumps(req(1, "hello")).encode()),
    "raw_garbage": (0, b"\x00\xff{\"v\":1"),
    "raw_deep": (0, b'{"v":1,"id":1,"op":"ping","x":' + b"[" * 1200 + b"]" * 1200 + b"}"),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, (mode, data) in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(bytes([mode]) + data)
    with open(os.path.join(HERE, "fuzz.dict"), "w") as f:
        f.write("# libFuzzer dictionary for fuzz_dispatch (written by make_corpus.py)\n")
        words = ["v", "id", "op", "hello", "ping", "process", "threads", "objects", "bins",
                 "regions", "metrics", "backend", "attach", "detach", "start", "read", "stop",
                 "samples_start", "samples_read", "samples_stop", "subscribe", "bye", "counters",
                 "metric", "ranges", "interval_ms", "experiment", "offset", "limit", "kinds",
                 "live", "name", "events", "period", "random", "seed", "max", "client",
                 "mem_ref", "reads", "writes", "l1d_miss", "global", "heap", "mmap", "stack",
                 "tls", "other", "count", "sim", "0x1000", "0x2000", "mark", "label", "where",
                 "replace", "features"]
        for i, w in enumerate(words):
            f.write('w%d="\\"%s\\""\n' % (i, w))
        for i, t in enumerate(['{"v":1,"id":', '","op":"', "true", "false", "null", "[[", "]]"]):
            f.write('t%d="%s"\n' % (i, t.replace('"', '\\"')))


if __name__ == "__main__":
    main()
