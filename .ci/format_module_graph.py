#!/usr/bin/env python3
"""farsight-format's module import graph must be acyclic.

Reads crates/farsight-format/src/*.rs (a module's children in src/MOD/ count as MOD), resolves every `crate::...` path (through the
root's `pub use` re-exports to the module that defines the name), ignores `#[cfg(test)]`
modules (tests may import anything), and fails naming a cycle if there is one.
`--dot` prints the graph instead.
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(__file__), "..", "crates", "farsight-format", "src")


def strip_comments(text):
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def strip_test_modules(text):
    """Drops each `#[cfg(test)] mod NAME { ... }` block (brace matched)."""
    out, i = [], 0
    pattern = re.compile(r"#\[cfg\((?:test|all\(test[^\]]*\))\)\]\s*(pub(\([a-z]+\))?\s+)?mod\s+\w+\s*\{")
    while True:
        m = pattern.search(text, i)
        if not m:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while depth and j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j


def split_group(body):
    """Top-level items of a `{a, b::{c, d}, e as f}` group."""
    items, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            items.append(cur.strip())
            cur = ""
            continue
        depth += {"{": 1, "}": -1}.get(ch, 0)
        cur += ch
    if cur.strip():
        items.append(cur.strip())
    return items


def main():
    modules = sorted(f[:-3] for f in os.listdir(SRC) if f.endswith(".rs") and f != "lib.rs")
    lib = strip_comments(open(os.path.join(SRC, "lib.rs")).read())
    owner = {}
    for m in re.finditer(r"pub use (\w+)::(\{[^}]*\}|\w+);", lib):
        names = m.group(2).strip("{}")
        for name in split_group(names):
            owner[name.split(" as ")[-1].strip()] = m.group(1)
    graph = {}
    for mod in modules:
        # A module's children (`src/MOD/*.rs`) count as part of it.
        paths = [os.path.join(SRC, mod + ".rs")]
        sub = os.path.join(SRC, mod)
        if os.path.isdir(sub):
            paths += sorted(os.path.join(sub, f) for f in os.listdir(sub) if f.endswith(".rs"))
        text = "".join(strip_test_modules(strip_comments(open(p).read())) for p in paths)
        deps = set()
        for m in re.finditer(r"crate::(\{(?:[^{}]|\{[^{}]*\})*\}|\w+)", text):
            first = m.group(1)
            heads = split_group(first[1:-1]) if first.startswith("{") else [first]
            for head in heads:
                head = re.split(r"::|\s", head)[0]
                target = head if head in modules else owner.get(head)
                if target is None:
                    sys.exit(f"{mod}.rs: cannot resolve crate::{head}")
                if target != mod:
                    deps.add(target)
        graph[mod] = sorted(deps)
    if "--dot" in sys.argv:
        print("digraph farsight_format {")
        for mod, deps in graph.items():
            for d in deps:
                print(f"  {mod} -> {d};")
        print("}")
        return
    # Depth-first search for a back edge.
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in graph[m]:
            if state.get(d) == 1:
                cycle = stack[stack.index(d):] + [d]
                sys.exit("farsight-format module cycle: " + " -> ".join(cycle))
            if d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in modules:
        if m not in state:
            visit(m)
    # Layers: a module's layer is one more than its deepest dependency's.
    layer = {}

    def depth(m):
        if m not in layer:
            layer[m] = 1 + max((depth(d) for d in graph[m]), default=-1)
        return layer[m]

    for m in modules:
        depth(m)
    for n in range(max(layer.values()) + 1):
        print(f"layer {n}: " + ", ".join(m for m in modules if layer[m] == n))
    print(f"farsight-format: {len(modules)} modules, import graph acyclic")


if __name__ == "__main__":
    main()
