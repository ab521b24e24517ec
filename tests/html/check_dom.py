#!/usr/bin/env python3
"""check_dom.py DOM LOG [--drawn ID ...] [--present ID ...]

Checks a page that headless Chromium loaded (DOM: its --dump-dom output,
LOG: its stderr with --enable-logging=stderr): the report's script finished
(body data-ameba-rendered="1"), counted no error (data-ameba-errors absent
or 0), logged nothing to the console, every view section is present, each
--drawn one with data-view-state="drawn" and none in state "error".
Prints one line per failed check; exit 0 when all hold.
"""
import re
import sys
from html.parser import HTMLParser

VIEWS = ["view-summary", "view-findings", "view-timeline", "view-heat", "view-matrix",
         "view-lines", "view-trace", "view-objects", "view-threads"]


class Sections(HTMLParser):
    def __init__(self):
        super().__init__()
        self.body = {}
        self.state = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body":
            self.body = a
        if a.get("id") in VIEWS:
            self.state[a["id"]] = a.get("data-view-state")


def main(argv):
    dom_path, log_path = argv[1], argv[2]
    drawn, mode = [], None
    for x in argv[3:]:
        if x in ("--drawn",):
            mode = x
        elif mode == "--drawn":
            drawn.append(x)
    fails = []
    p = Sections()
    with open(dom_path, encoding="utf-8", errors="replace") as f:
        p.feed(f.read())
    if p.body.get("data-ameba-rendered") != "1":
        fails.append("the report's script did not finish (body data-ameba-rendered=%r)"
                     % p.body.get("data-ameba-rendered"))
    if p.body.get("data-ameba-errors", "0") != "0":
        fails.append("the page counted %s script error(s)" % p.body["data-ameba-errors"])
    with open(log_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if "CONSOLE" in line:
                fails.append("console: " + line.strip())
    for v in VIEWS:
        st = p.state.get(v, "missing")
        if v not in p.state:
            fails.append("view #%s is missing" % v)
        elif st not in ("drawn", "empty"):
            fails.append("view #%s is in state %r" % (v, st))
    for v in drawn:
        if p.state.get(v) != "drawn":
            fails.append("view #%s: want drawn, is %r" % (v, p.state.get(v)))
    for f_ in fails:
        print("check_dom: %s: %s" % (dom_path, f_))
    if not fails:
        print("check_dom: %s: ok (%s; render %s ms)" % (
            dom_path, ", ".join("%s=%s" % (k[5:], p.state[k]) for k in VIEWS),
            p.body.get("data-ameba-render-ms", "?")))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
